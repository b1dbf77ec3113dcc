"""Long synthetic histories for one subject: what the scale benchmark (and anyone profiling
growth) appends, in four shapes (:data:`SHAPES`).

``spread`` (:func:`fill`), a conversation spread over days. Events are 12-word turns, 7
minutes apart, that name two made-up content words (so a question's words match a few dozen
events, as names and places do in a real conversation), with an amount of money every 23rd
turn, a negation every 37th and an order reference (``ref ORD-<i % 997>``, an identifier)
at the end of every 5th. Facts arrive every ``FACT_EVERY`` events, cycling over a small set
of keys so that the active ledger stays bounded while its history grows:

* the latest invoice's total (``invoice.total``), superseded by the next one (each
  supersession moves the epoch, as in real use);
* a channel the subject may not be contacted on (``contact.allowed`` ``False``: a negation
  in the ledger), superseded by the next;
* now and then a second total from another turn, asserted without superseding: an open
  conflict, until the next total supersedes both sides (the rival by a correction, deleted
  in turn as a duplicate at the total after).

``bulk`` (:func:`fill_bulk`), an existing history imported at once: turns of 12 words of a
16-word vocabulary (:data:`VOCABULARY`; each word is in three turns of four), a
counterpart's name (one of :data:`WORDS`, so that a question's names are as rare as in
``spread``) and an invoice reference (``ref INV-<i % 997>``), appended in batches of 1,000
with no ``occurred_at``: every event is stamped with its append time, so the whole history
is one day. One critical fact (``food.peanuts_allowed`` ``False``) comes with the first
batch; no other.

``session`` (:func:`fill_session`), one endless session: ``spread``'s turns, times and facts,
each turn with ``payload={"session": 1}`` (so a hierarchy split by session has one period).

``undated`` (:func:`fill_undated`), a history with no dates: ``spread``'s turns and facts with
no ``occurred_at`` (the append time) and no session.

Every fill appends events ``[start, stop)`` and their facts, in batches of one transaction
each; the same arguments give the same rows (the same texts and facts: the undated shapes'
times are those of the append). With ``changes`` off, a fill is a pure tail append (the
epoch does not move): ``spread``, ``session`` and ``undated`` then assert topics instead of
their supersessions and conflicts, ``bulk`` no fact. Event ids (``e<i>``) are unique within a tenant: two histories
in one database need two tenants. Each shape has three kinds of questions
(:attr:`Shape.queries`): ``rare`` (a word said in exactly three turns at every size: :data:`RARE`),
``names`` (two counterparts' names, each matching a few events at 1,000 and about a hundred at
100,000), ``common`` (words in most events) and ``identifier`` (a reference, alone or with
common words).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from lossgate.api.memory import Memory
from lossgate.ledger.lifecycle import Ledger
from lossgate.model.records import NewEvent, NewFact

__all__ = [
    "T0",
    "WORDS",
    "VOCABULARY",
    "FACT_EVERY",
    "QUERY_KINDS",
    "SHAPES",
    "Shape",
    "event_id",
    "event_text",
    "bulk_text",
    "fill",
    "fill_bulk",
    "fill_session",
    "fill_undated",
    "RARE",
    "questions",
    "rare_questions",
]

T0 = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)
FACT_EVERY = 50
CHANNELS = ("phone", "sms", "email", "post")
_SYL = ["ka", "lo", "mi", "ne", "ru", "to", "sa", "vi", "po", "de", "gu", "fa"]
WORDS = [a + b + c + "n" for a in _SYL for b in _SYL for c in _SYL][:1728]
VOCABULARY = (
    "refund budget invoice meeting travel lisbon hotel flight order payment review account manager team report plan"
).split()
QUERY_KINDS = ("rare", "names", "common", "identifier")
# Words said in exactly three turns of every history, whatever its size: rare word ``k`` is in
# turns ``3 + 5k``, ``323 + 5k`` and ``643 + 5k`` (all among the first 1,000, never a turn with
# an order reference). A question about one of them asks for the same answer at 1,000 events
# and at 100,000, which a question about a counterpart's name does not (:func:`questions`).
RARE = [f"q{a}{b}x" for a in _SYL for b in _SYL][:64]
_RARE_AT = {3 + 5 * (k + 64 * r): RARE[k] for k in range(len(RARE)) for r in range(3)}
BULK_BATCH = 1000
Fill = Callable[..., dict[str, str]]


def event_id(i: int) -> str:
    return f"e{i}"


def event_text(i: int) -> str:
    """Turn ``i``'s text (``spread``, ``session``, ``undated``): 12 words, two content words,
    sometimes money or a negation; every 5th ends with an order reference."""
    a, b = WORDS[i % 1728], _RARE_AT.get(i, WORDS[(i * 7 + 3) % 1728])
    if i % 37 == 5:
        text = f"turn {i}: please do not contact me about the {a} or {b} again"
    elif i % 23 == 7:
        text = f"turn {i}: the {a} order came to ${100 + i % 900},00 with {b} shipping"[:120]
    else:
        text = f"turn {i}: we talked about the {a} and the {b} this morning"
    return f"{text} ref ORD-{i % 997}" if i % 5 == 0 else text


def bulk_text(i: int) -> str:
    """Imported turn ``i``'s text: 12 consecutive words of the vocabulary (from a place that
    moves with ``i``), a counterpart's name and an invoice reference."""
    start = i * 5 % len(VOCABULARY)
    words = " ".join(VOCABULARY[(start + j) % len(VOCABULARY)] for j in range(12))
    return f"{words} for {_RARE_AT.get(i, WORDS[i % 1728])} ref INV-{i % 997}"


def _when(i: int) -> datetime:
    return T0 + timedelta(minutes=7 * i)


def _facts(
    tenant: str,
    subject: str,
    i: int,
    active: dict[str, str],
) -> tuple[list[NewFact], list[tuple[str, NewFact]], list[str]]:
    """The facts that arrive with event ``i``: (new ones, supersessions (old id, new), ids to delete)."""
    k = i // FACT_EVERY
    fresh: list[NewFact] = []
    replace: list[tuple[str, NewFact]] = []
    retract: list[str] = []
    source = (event_id(i),)

    def put(key: str, fact: NewFact) -> None:
        if key in active:
            replace.append((active[key], fact))
        else:
            fresh.append(fact)
        active[key] = fact.fact_id or ""

    if k % 3 == 0:  # the latest invoice's total (cardinality one: each replaces the last)
        fact = NewFact(
            tenant_id=tenant,
            subject_id=subject,
            fact_id=f"f{i}-total",
            predicate="invoice.total",
            value={"amount": f"{1000 + (k * 37) % 9000}.00", "currency": "USD"},
            qualifiers={"invoice_id": f"INV-{1000 + k}"},
            source_event_ids=source,
        )
        put("total", fact)
        # the last conflict ends: its rival is corrected to the new total, and the correction
        # before it, a duplicate now, is retracted
        if "fix" in active:
            retract.append(active.pop("fix"))
        if "rival" in active:
            replace.append((active.pop("rival"), fact.model_copy(update={"fact_id": f"f{i}-fix"})))
            active["fix"] = f"f{i}-fix"
    elif k % 3 == 1:  # a channel the subject may not be contacted on (a negation)
        channel = CHANNELS[k % len(CHANNELS)]
        put(
            "contact",
            NewFact(
                tenant_id=tenant,
                subject_id=subject,
                fact_id=f"f{i}-contact",
                predicate="contact.allowed",
                value=False,
                qualifiers={"channel": channel},
                source_event_ids=source,
            ),
        )
    elif k % 9 == 2 and "total" in active and "rival" not in active:  # another total: an open conflict
        active["rival"] = f"f{i}-rival"
        fresh.append(
            NewFact(
                tenant_id=tenant,
                subject_id=subject,
                fact_id=f"f{i}-rival",
                predicate="invoice.total",
                value={"amount": f"{2000 + k % 500}.00", "currency": "USD"},
                qualifiers={"invoice_id": f"INV-{1000 + k - 2}"},
                source_event_ids=source,
            )
        )
    return fresh, replace, retract


def _topics(led: Ledger, tenant: str, subject: str, lo: int, hi: int) -> None:
    """A conversational topic (``chat.topic``) with every ``FACT_EVERY``-th event of ``[lo, hi)``."""
    facts = [
        NewFact(
            tenant_id=tenant,
            subject_id=subject,
            fact_id=f"f{i}-topic",
            predicate="chat.topic",
            value=WORDS[i % 1728],
            source_event_ids=(event_id(i),),
        )
        for i in range(lo, hi)
        if i % FACT_EVERY == 0
    ]
    if facts:
        led.assert_facts(facts)


def _changes(led: Ledger, tenant: str, subject: str, lo: int, hi: int, active: dict[str, str]) -> None:
    """``spread``'s facts of events ``[lo, hi)``: totals, negations, conflicts, deletions."""
    for i in range(lo, hi):
        if i % FACT_EVERY:
            continue
        fresh, replace, retract = _facts(tenant, subject, i, active)
        if fresh:
            led.assert_facts(fresh)
        for old, new in replace:
            led.supersede(tenant, subject, old, new)
        for old in retract:
            led.delete_fact(tenant, subject, old, reason="a duplicate of the current total")


def _event(tenant: str, subject: str, i: int, text: str, *, dated: bool, session: bool) -> NewEvent:
    """Event ``i``: dated by :func:`_when` or stamped with the append time; in session 1 or in none."""
    extra: dict[str, Any] = {"occurred_at": _when(i)} if dated else {}
    if session:
        extra["payload"] = {"session": 1}
    return NewEvent(
        tenant_id=tenant,
        subject_id=subject,
        event_id=event_id(i),
        actor="user" if i % 2 else "agent",
        text=text,
        **extra,
    )


def fill(
    memory: Memory,
    tenant: str,
    subject: str,
    start: int,
    stop: int,
    *,
    batch: int = 2000,
    active: dict[str, str] | None = None,
    changes: bool = True,
) -> dict[str, str]:
    """``spread``: append events ``[start, stop)`` with their facts. ``active`` maps each fact
    key to the id of its active fact (returned, to pass to the next call); a supersession
    replaces it. With ``changes`` off, the batch is a pure tail append (the epoch does not
    move): its facts are new conversational topics (``chat.topic``), never a supersession or
    a conflict."""
    active = {} if active is None else active
    for lo in range(start, stop, batch):
        hi = min(stop, lo + batch)
        with memory.transaction() as led:
            led.append([_event(tenant, subject, i, event_text(i), dated=True, session=False) for i in range(lo, hi)])
            if changes:
                _changes(led, tenant, subject, lo, hi, active)
            else:
                _topics(led, tenant, subject, lo, hi)
    return active


def fill_bulk(
    memory: Memory,
    tenant: str,
    subject: str,
    start: int,
    stop: int,
    *,
    batch: int = BULK_BATCH,
    active: dict[str, str] | None = None,
    changes: bool = True,
) -> dict[str, str]:
    """``bulk``: append imported events ``[start, stop)``, undated; the batch holding event 0
    also asserts that the subject may not be served peanuts (unless ``changes`` is off)."""
    active = {} if active is None else active
    for lo in range(start, stop, batch):
        hi = min(stop, lo + batch)
        with memory.transaction() as led:
            led.append([_event(tenant, subject, i, bulk_text(i), dated=False, session=False) for i in range(lo, hi)])
            if changes and lo == 0:
                led.assert_facts(
                    [
                        NewFact(
                            tenant_id=tenant,
                            subject_id=subject,
                            fact_id="f0-peanuts",
                            predicate="food.peanuts_allowed",
                            value=False,
                            qualifiers={"basis": "allergy", "severity": "severe"},
                            source_event_ids=(event_id(0),),
                        )
                    ]
                )
                active["peanuts"] = "f0-peanuts"
    return active


def _fill_turns(
    memory: Memory,
    tenant: str,
    subject: str,
    start: int,
    stop: int,
    *,
    batch: int,
    active: dict[str, str] | None,
    changes: bool,
    dated: bool,
    session: bool,
) -> dict[str, str]:
    """``spread``'s turns and facts, dated or not, in session 1 or in none."""
    active = {} if active is None else active
    for lo in range(start, stop, batch):
        hi = min(stop, lo + batch)
        with memory.transaction() as led:
            led.append([_event(tenant, subject, i, event_text(i), dated=dated, session=session) for i in range(lo, hi)])
            if changes:
                _changes(led, tenant, subject, lo, hi, active)
            else:
                _topics(led, tenant, subject, lo, hi)
    return active


def fill_session(
    memory: Memory,
    tenant: str,
    subject: str,
    start: int,
    stop: int,
    *,
    batch: int = 2000,
    active: dict[str, str] | None = None,
    changes: bool = True,
) -> dict[str, str]:
    """``session``: append events ``[start, stop)`` and their facts as :func:`fill` does, all in session 1."""
    return _fill_turns(
        memory, tenant, subject, start, stop, batch=batch, active=active, changes=changes, dated=True, session=True
    )


def fill_undated(
    memory: Memory,
    tenant: str,
    subject: str,
    start: int,
    stop: int,
    *,
    batch: int = 2000,
    active: dict[str, str] | None = None,
    changes: bool = True,
) -> dict[str, str]:
    """``undated``: append events ``[start, stop)`` and their facts as :func:`fill` does, with no
    date and no session."""
    return _fill_turns(
        memory, tenant, subject, start, stop, batch=batch, active=active, changes=changes, dated=False, session=False
    )


def rare_questions() -> list[str]:
    """Questions whose one content word is said in exactly three turns of any history of at
    least 1,000 events (:data:`RARE`): the same answer at every size."""
    return [f"What did the customer say about the {w}?" for w in RARE]


def questions(n: int = 64) -> list[str]:
    """Questions naming two counterparts, each said about once in 1,728 turns: a few matches
    at 1,000 events, about a hundred at 100,000 (the answer grows with the history)."""
    return [
        f"What did the customer say about the {WORDS[i * 37 % 1728]} and the {WORDS[i * 91 % 1728]}?" for i in range(n)
    ]


def _identifiers(prefix: str, numbers: Sequence[int], common: str) -> list[str]:
    """A reference alone, then the next with words of most events, in turn."""
    return [f"{prefix}-{n}" if k % 2 == 0 else f"{prefix}-{n} {common}" for k, n in enumerate(numbers)]


# The turns' words in most events: spread's plain turns say "talked" and "morning" (93 % of the
# turns), every turn says "turn"; every bulk word is in three turns of four.
_COMMON_TURNS = ["talked morning", "What was talked about this morning?", "turn talked", "morning turn"]
_COMMON_BULK = [
    "refund budget",
    "invoice meeting",
    "travel hotel",
    "payment review",
    "account manager",
    "team report plan",
    "What about the refund budget?",
    "lisbon flight order",
]
# ORD-<n> is in turn n (a 5th turn when n is a multiple of 5) and every 4,985th after it;
# INV-<n> in import n and every 997th after it: one or two events at 1,000, a hundred at 100,000.
_TURN_QUERIES: Mapping[str, Sequence[str]] = {
    "rare": rare_questions(),
    "names": questions(),
    "common": _COMMON_TURNS,
    "identifier": _identifiers("ORD", [5 * k for k in range(1, 33)], "talked morning"),
}
_BULK_QUERIES: Mapping[str, Sequence[str]] = {
    "rare": rare_questions(),
    "names": questions(),
    "common": _COMMON_BULK,
    "identifier": _identifiers("INV", list(range(1, 33)), "refund budget"),
}


@dataclass(frozen=True)
class Shape:
    """One shape of history: how it is appended (``fill(memory, tenant, subject, start,
    stop, batch=..., active=..., changes=...)``, returning ``active``), in batches of
    ``batch`` events, and the questions of each kind (:data:`QUERY_KINDS`) asked of it."""

    name: str
    description: str
    fill: Fill
    batch: int
    queries: Mapping[str, Sequence[str]]


SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape(
            "spread",
            "12-word turns over days, facts every 50th (supersessions, negations, conflicts, deletions)",
            fill,
            2000,
            _TURN_QUERIES,
        ),
        Shape(
            "bulk",
            "an import: turns of a 16-word vocabulary, undated (one day), batches of 1,000, one critical fact",
            fill_bulk,
            BULK_BATCH,
            _BULK_QUERIES,
        ),
        Shape(
            "session",
            "one endless session: spread's turns, times and facts, all in session 1",
            fill_session,
            2000,
            _TURN_QUERIES,
        ),
        Shape(
            "undated",
            "no dates, no session: spread's turns and facts at the append time",
            fill_undated,
            2000,
            _TURN_QUERIES,
        ),
    )
}
