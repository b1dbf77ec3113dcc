"""Recall's token counts without tokenizing a long summary on every call.

Without a budget, a recall's ``tokens`` is the count of its whole rendered block
(:meth:`~lossgate.model.derived_records.RecallResult.render`): the header and the facts, the summary's
prose, then the events and their day lines, joined by newlines. A hierarchical root's
summary can run to many thousand tokens and is the same recall after recall, so recall
counts its prose once (with the newline that follows it) and adds the count of the rest;
that is exact for the default tokenizer, whose pieces always end at a newline followed by
a visible character. These tests hold recall to the whole count, on arbitrary summaries
and on recall's own lines, and to the whole count for any other counter.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from lossgate.consolidate.tokens import default_counter
from lossgate.model.derived_records import block_parts
from lossgate.model.records import Event
from lossgate.model.wording import day_line, event_line, header_line
from lossgate.recall import read as recall_module

COUNT = default_counter()
AT = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)

# Lines as recall writes them after the summary: facts and events start "- ", days "[".
_LINE_START = st.sampled_from(["- ", "- user: ", "- agent: ", "[2026-03-14]", "- contact.allowed: NOT ", "-", "["])
_LINES = st.lists(
    st.tuples(_LINE_START, st.text(max_size=40)).map(lambda p: p[0] + p[1].replace("\n", " ")), min_size=1, max_size=6
).map("\n".join)
_SUMMARY_ENDS = st.sampled_from(
    ["", ".", " ", "  ", "\n", "\r", "\t", "'", "'s", "42", "é", "—", "…", ":", "\u3000", "🙂"]
)


@settings(max_examples=400)
@given(summary=st.tuples(st.text(max_size=80), _SUMMARY_ENDS).map("".join), rest=_LINES)
def test_the_summary_counted_once_plus_the_rest_is_the_whole_count(summary: str, rest: str) -> None:
    whole = COUNT("\n".join([summary, rest]))
    assert recall_module._joined_tokens(summary or None, rest, COUNT) == whole


def test_recall_lines_after_a_long_root_count_as_the_whole_text() -> None:
    periods = "\n".join(
        f"[2025-01-{d:02d}]\n- user: turn {d}: we talked about the kagukan ({d * 3}.00 USD)." for d in range(1, 29)
    )
    summary = f"Memory of s (tenant t).\n- invoice.total: 2926.00 USD (invoice_id=INV-2998)\nPeriods:\n{periods}"
    events = [
        Event(
            tenant_id="t",
            subject_id="s",
            event_id=f"e{i}",
            seq=i,
            kind="message",
            actor="user",
            trust="untrusted" if i % 3 else "authenticated_user",
            text=f"turn {i}: the order came to ${i},00!",
            payload={},
            occurred_at=AT + timedelta(days=i),
            recorded_at=AT,
            content_hash="sha256:x",
        )
        for i in range(1, 6)
    ]
    rest = "\n".join([event_line(e) for e in events] + sorted({day_line(e) for e in events}))
    assert recall_module._joined_tokens(summary, rest, COUNT) == COUNT(summary + "\n" + rest)
    assert recall_module._joined_tokens(summary, "", COUNT) == COUNT(summary)
    assert recall_module._joined_tokens(None, rest, COUNT) == COUNT("\n" + rest)


def test_any_other_counter_counts_the_whole_text() -> None:
    seen: list[str] = []

    def chars(text: str) -> int:
        seen.append(text)
        return len(text)

    assert recall_module._joined_tokens("a summary", "- a line", chars) == len("a summary\n- a line")
    assert seen == ["a summary\n- a line"]


_TITLES = st.sampled_from(["Conversation:", "Narrative:", "Periods:"])


@settings(max_examples=300)
@given(
    subject=st.text(min_size=1, max_size=20),
    structured=_LINES,
    title=_TITLES,
    prose=_LINES,
    texts=st.lists(st.text(max_size=30), max_size=3),
)
def test_the_rendered_block_counted_by_parts_is_the_whole_count(
    subject: str, structured: str, title: str, prose: str, texts: list[str]
) -> None:
    """The block's header and facts, then the summary's prose (counted once per summary),
    then the events: the count of the block as render() joins it."""
    summary = "\n".join([header_line("t", subject), structured, title, prose])
    events = [
        Event(
            tenant_id="t",
            subject_id="s",
            event_id=f"e{i}",
            seq=i,
            kind="message",
            actor="user",
            trust="untrusted",
            text=text,
            payload={},
            occurred_at=AT + timedelta(days=i),
            recorded_at=AT,
            content_hash="sha256:x",
        )
        for i, text in enumerate(texts)
    ]
    block = "\n".join(part for part in block_parts("t", subject, summary, [], events) if part)
    assert recall_module._block_tokens("t", subject, summary, [], events, COUNT) == COUNT(block)
    assert block.split("\n").count(header_line("t", subject)) == 0  # the summary's own header is not printed
