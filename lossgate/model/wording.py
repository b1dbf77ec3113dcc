"""Facts, values and events as text, written the same way wherever they appear.

This is the one rendering of memory as text. The deterministic compressor writes
one :func:`fact_line` per claim into a summary, under the section titles below;
the chat compressor puts the same lines in its prompt; recall and
:meth:`~lossgate.model.derived_records.RecallResult.render` write facts and events with them;
and the gate's prose diff recognises a summary line that renders one of the
artifact's own claims: that line says exactly what the claim says, and the fact
contract already checks the claim field by field (value, polarity, qualifiers,
provenance). Reading it again as prose would only pair its words with whatever
the conversation said, e.g. a negation in an untrusted message against the
claim's ``condition=...`` qualifier. A line that differs from every claim's
rendering by a single character is prose like any other.

Not here, on purpose: the gate's :func:`~lossgate.gate.sources.value_forms`, which
lists the forms a summary might use for a value ("12" and "12%", "30 minutes"
and "PT30M", "USD 14250" where this module writes "14250.00 USD"), canonicalised
the gate's way, so that the atoms of a value can be matched. It answers another question (what may a summary have
written?) and the gate's verdicts rest on its exact output; and the CLI's table
cells (:mod:`lossgate.cli.display`), which quote strings so that ``"false"`` is
not read as ``false``.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from lossgate.model.values import coerce_value, encode_value

__all__ = [
    "value_text",
    "fact_line",
    "claim_lines",
    "conflict_line",
    "ledger_line",
    "ledger_line_predicates",
    "event_line",
    "day_line",
    "header_line",
    "period_line",
    "one_line",
    "section_lines",
    "summary_parts",
    "CONVERSATION_TITLE",
    "NARRATIVE_TITLE",
    "PERIODS_TITLE",
    "SECTION_TITLES",
    "PERIOD_LINE",
]

# The titles of a summary's sections after its structured lines: the recent conversation
# (the deterministic compressor's whole event lines) or a model's narrative. Recall splits
# a summary at the first; the gate reads the text under either as prose.
CONVERSATION_TITLE = "Conversation:"
NARRATIVE_TITLE = "Narrative:"
# The section of a hierarchical root (:mod:`lossgate.consolidate.hierarchy`): one digest per
# period, oldest first, each under its :func:`period_line`.
PERIODS_TITLE = "Periods:"
# Every title a summary's prose starts with: the lines before the first of them are its
# structured part (single-line renderings: its header, its claims, its open conflicts).
SECTION_TITLES = (CONVERSATION_TITLE, NARRATIVE_TITLE, PERIODS_TITLE)
_SECTION_TITLE = re.compile("^(?:" + "|".join(re.escape(t) for t in SECTION_TITLES) + ")$", re.MULTILINE)


class _FactLike(Protocol):
    """A fact or a claim: what a fact line shows (read-only, so a record whose fields are
    narrower literals fits)."""

    @property
    def predicate(self) -> str: ...
    @property
    def value_type(self) -> str: ...
    @property
    def value(self) -> Any: ...
    @property
    def qualifiers(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def polarity(self) -> str: ...
    @property
    def modality(self) -> str: ...
    @property
    def authority(self) -> str: ...


def value_text(record: Any) -> str:
    """A typed value as a person reads it: ``false``, ``14250.00 USD``, ``2026-03-25``."""
    v = record.value
    if record.value_type == "bool":
        return "true" if v else "false"
    if record.value_type == "money":
        return f"{v.amount} {v.currency}"
    return str(encode_value(record.value_type, v))


def fact_line(record: _FactLike) -> str:
    """``- predicate: [NOT ]value (k=v, ...) [modality, authority source]`` for a fact or claim."""
    # One line whatever a value or qualifier holds: a newline in one must never start a
    # line of its own in a summary (a forged fact, conversation or period line).
    quals = ", ".join(f"{k}={one_line(str(v))}" for k, v in record.qualifiers)
    line = f"{record.predicate}: {'NOT ' if record.polarity == 'negative' else ''}{one_line(value_text(record))}"
    if quals:
        line += f" ({quals})"
    if record.modality != "asserted" or record.authority == "untrusted":
        line += f" [{record.modality}, {record.authority} source]"
    return "- " + line


def claim_lines(claims: Any) -> frozenset[str]:
    """The lines that render ``claims`` (claims whose value does not parse render nothing)."""
    out = set()
    for c in claims:
        try:
            # an enum's allowed values live in the registry; its value is the string it renders
            typed = (
                c.value if c.value_type == "enum" and isinstance(c.value, str) else coerce_value(c.value_type, c.value)
            )
        except (ValueError, TypeError, ArithmeticError, AttributeError):
            continue
        out.add(fact_line(c.model_copy(update={"value": typed})))
    return frozenset(out)


def conflict_line(predicate: str, fact_ids: Any) -> str:
    """The summary line that carries an open conflict (the gate reads it as structure)."""
    return f"- UNRESOLVED CONFLICT on {predicate}: facts {fact_ids[0]} and {fact_ids[1]} disagree."


_LEDGER_LINE = "[see the ledger: "


def ledger_line(predicates: Any) -> str:
    """``[see the ledger: food.peanuts_allowed]``: what a published narrative says where a
    model's sentence on a topic only the ledger states was left out (the gate reads it as
    structure when the summary claims every predicate it names)."""
    return f"{_LEDGER_LINE}{', '.join(one_line(p) for p in predicates)}]"


def ledger_line_predicates(line: str) -> tuple[str, ...]:
    """The predicates a :func:`ledger_line` names (none for any other line)."""
    if not (line.startswith(_LEDGER_LINE) and line.endswith("]")):
        return ()
    names = tuple(line[len(_LEDGER_LINE) : -1].split(", "))
    return names if all(n and n == one_line(n) and "]" not in n for n in names) else ()


def header_line(tenant_id: str, subject_id: str) -> str:
    """The first line of a deterministic summary. The gate reads it as structure, not prose
    (a subject named "Bob" is not a party the summary invented)."""
    return f"Memory of {one_line(subject_id)} (tenant {one_line(tenant_id)})."


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) as one space: an event's text
    or actor can never start a line of its own in a summary (a forged fact line)."""
    return " ".join(text.split())


def event_line(event: Any) -> str:
    """``- Caroline: text``: an event as a summary's conversation and recall write it (recall
    under its day's header, :func:`day_line`). One line whatever the text holds; untrusted
    text is marked as a quote, so an agent never reads it as an instruction (invariant 8)."""
    actor, text = one_line(event.actor or ""), one_line(event.text or "")
    if event.trust == "untrusted":
        # Marked, not wrapped in quotation marks: a mark glued to the first word would change
        # the statement the gate's atom extractor reads, and fail a faithful summary.
        return f"- {actor} (untrusted, quoted): {text}"
    return f"- {actor}: {text}"


def period_line(first: Any, last: Any) -> str:
    """``[2023-05-08]``, or ``[2023-05-08 to 2023-05-12]``: the title of one period's digest,
    from the times of its first and last events (each in its own offset; the earlier day first)."""
    a, b = sorted((first.date().isoformat(), last.date().isoformat()))
    return f"[{a}]" if a == b else f"[{a} to {b}]"


# What :func:`period_line` writes (recall, the gate and the roll-up recognise a title by it).
PERIOD_LINE = re.compile(r"\[\d{4}-\d{2}-\d{2}(?: to \d{4}-\d{2}-\d{2})?\]")


def day_line(event: Any) -> str:
    """``[2023-05-08]``: the header of the events of one day (in the event's own offset)."""
    return f"[{event.occurred_at.date().isoformat()}]"


def section_lines(summary: str, title: str) -> list[str]:
    """The ``- `` lines under ``title`` in ``summary`` (a direct summary's recent
    conversation, under :data:`CONVERSATION_TITLE`); none without that title."""
    lines = summary.splitlines()
    if title not in lines:
        return []
    return [ln for ln in lines[lines.index(title) + 1 :] if ln.startswith("- ")]


def summary_parts(summary: str) -> tuple[list[str], str]:
    """A summary's structured lines (its :func:`header_line`, a :func:`fact_line` per claim, a
    :func:`conflict_line` per open conflict) and its prose: everything from the first line
    that is exactly one of :data:`SECTION_TITLES` on, that title included (``""`` without
    one). No structured line can be a title (each starts with ``- `` or is the header), so
    the first title is the summary's own, whatever a narrative writes after it."""
    found = _SECTION_TITLE.search(summary)
    if found is None:
        return [ln for ln in summary.split("\n") if ln.strip()], ""
    head = summary[: max(found.start() - 1, 0)]  # without the newline before the title
    return [ln for ln in head.split("\n") if ln.strip()], summary[found.start() :]
