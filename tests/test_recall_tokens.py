"""Recall's token counts without tokenizing a long summary on every call.

Without a budget, a recall's ``tokens`` is the count of its whole text: the summary, then
its facts, events and day lines, joined by newlines. A hierarchical root's summary can run
to many thousand tokens and is the same recall after recall, so recall counts it once
(with the newline that follows it) and adds the count of the rest; that is exact for the
default tokenizer, whose pieces always end at a newline followed by a visible character.
These tests hold recall to the whole count, on arbitrary summaries and on recall's own
lines, and to the whole count for any other counter.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lossgate import recall as recall_module
from lossgate.consolidate.tokens import default_counter
from lossgate.records import Event
from lossgate.render import day_line, event_line

COUNT = default_counter()
AT = datetime(2026, 3, 14, 9, 0, tzinfo=timezone.utc)

# Lines as recall writes them after the summary: facts and events start "- ", days "[".
_LINE_START = st.sampled_from(["- ", "- user: ", "- agent: ", "[2026-03-14]", "- contact.allowed: NOT ", "-", "["])
_LINES = st.lists(st.tuples(_LINE_START, st.text(max_size=40)).map(lambda p: p[0] + p[1].replace("\n", " ")),
                  min_size=1, max_size=6).map("\n".join)
_SUMMARY_ENDS = st.sampled_from(["", ".", " ", "  ", "\n", "\r", "\t", "'", "'s", "42", "é", "—", "…", ":", "\u3000", "🙂"])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(summary=st.tuples(st.text(max_size=80), _SUMMARY_ENDS).map("".join), rest=_LINES)
def test_the_summary_counted_once_plus_the_rest_is_the_whole_count(summary: str, rest: str) -> None:
    whole = COUNT("\n".join([summary, rest]))
    assert recall_module._joined_tokens(summary or None, rest, COUNT) == whole


def test_recall_lines_after_a_long_root_count_as_the_whole_text() -> None:
    periods = "\n".join(f"[2025-01-{d:02d}]\n- user: turn {d}: we talked about the kagukan ({d * 3}.00 USD)."
                        for d in range(1, 29))
    summary = f"Memory of s (tenant t).\n- invoice.total: 2926.00 USD (invoice_id=INV-2998)\nPeriods:\n{periods}"
    events = [Event(tenant_id="t", subject_id="s", event_id=f"e{i}", seq=i, kind="message", actor="user",
                    trust="untrusted" if i % 3 else "authenticated_user", text=f"turn {i}: the order came to ${i},00!",
                    payload={}, occurred_at=AT + timedelta(days=i), recorded_at=AT, content_hash="sha256:x")
             for i in range(1, 6)]
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
