"""A long synthetic history for one subject: what the scale benchmark (and anyone profiling
growth) appends.

Events are 12-word turns that name two made-up content words (so a question's words match
a few dozen events, as names and places do in a real conversation), with an amount of money
every 23rd turn and a negation every 37th. Facts arrive every ``FACT_EVERY`` events, cycling
over a small set of keys so that the active ledger stays bounded while its history grows:

* the latest invoice's total (``invoice.total``), superseded by the next one (each
  supersession moves the epoch, as in real use);
* a channel the subject may not be contacted on (``contact.allowed`` ``False``: a negation
  in the ledger), superseded by the next;
* now and then a second total from another turn, asserted without superseding: an open
  conflict, until the next total supersedes both sides (the rival by a correction, deleted
  in turn as a duplicate at the total after).

:func:`fill` appends events ``[start, stop)`` and their facts, in batches of one
transaction each; the same arguments give the same rows. Event ids (``e<i>``) are unique
within a tenant: two histories in one database need two tenants.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from lossgate.memory import Memory
from lossgate.records import NewEvent, NewFact

__all__ = ["T0", "WORDS", "FACT_EVERY", "event_id", "event_text", "fill", "questions"]

T0 = datetime(2025, 1, 1, 9, 0, tzinfo=timezone.utc)
FACT_EVERY = 50
CHANNELS = ("phone", "sms", "email", "post")
_SYL = ["ka", "lo", "mi", "ne", "ru", "to", "sa", "vi", "po", "de", "gu", "fa"]
WORDS = [a + b + c + "n" for a in _SYL for b in _SYL for c in _SYL][:1728]


def event_id(i: int) -> str:
    return f"e{i}"


def event_text(i: int) -> str:
    """Turn ``i``'s text: 12 words, two content words, sometimes money or a negation."""
    a, b = WORDS[i % 1728], WORDS[(i * 7 + 3) % 1728]
    if i % 37 == 5:
        return f"turn {i}: please do not contact me about the {a} or {b} again"
    if i % 23 == 7:
        return f"turn {i}: the {a} order came to ${100 + i % 900},00 with {b} shipping"[:120]
    return f"turn {i}: we talked about the {a} and the {b} this morning"


def _when(i: int) -> datetime:
    return T0 + timedelta(minutes=7 * i)


def _facts(tenant: str, subject: str, i: int, active: dict[str, str],
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
        fact = NewFact(tenant_id=tenant, subject_id=subject, fact_id=f"f{i}-total", predicate="invoice.total",
                       value={"amount": f"{1000 + (k * 37) % 9000}.00", "currency": "USD"},
                       qualifiers={"invoice_id": f"INV-{1000 + k}"}, source_event_ids=source)
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
        put("contact", NewFact(tenant_id=tenant, subject_id=subject, fact_id=f"f{i}-contact",
                               predicate="contact.allowed", value=False, qualifiers={"channel": channel},
                               source_event_ids=source))
    elif k % 9 == 2 and "total" in active and "rival" not in active:  # another total: an open conflict
        active["rival"] = f"f{i}-rival"
        fresh.append(NewFact(tenant_id=tenant, subject_id=subject, fact_id=f"f{i}-rival", predicate="invoice.total",
                             value={"amount": f"{2000 + k % 500}.00", "currency": "USD"},
                             qualifiers={"invoice_id": f"INV-{1000 + k - 2}"}, source_event_ids=source))
    return fresh, replace, retract


def fill(memory: Memory, tenant: str, subject: str, start: int, stop: int, *, batch: int = 2000,
         active: dict[str, str] | None = None, changes: bool = True) -> dict[str, str]:
    """Append events ``[start, stop)`` with their facts. ``active`` maps each fact key to the
    id of its active fact (returned, to pass to the next call); a supersession replaces it.
    With ``changes`` off, the batch is a pure tail append (the epoch does not move): its facts
    are new conversational topics (``chat.topic``), never a supersession or a conflict."""
    active = {} if active is None else active
    for lo in range(start, stop, batch):
        hi = min(stop, lo + batch)
        with memory.transaction() as led:
            led.append([NewEvent(tenant_id=tenant, subject_id=subject, event_id=event_id(i), occurred_at=_when(i),
                                 actor="user" if i % 2 else "agent", text=event_text(i)) for i in range(lo, hi)])
            for i in range(lo, hi):
                if i % FACT_EVERY:
                    continue
                if not changes:
                    led.assert_facts([NewFact(tenant_id=tenant, subject_id=subject, fact_id=f"f{i}-topic",
                                              predicate="chat.topic", value=WORDS[i % 1728],
                                              source_event_ids=(event_id(i),))])
                    continue
                fresh, replace, retract = _facts(tenant, subject, i, active)
                if fresh:
                    led.assert_facts(fresh)
                for old, new in replace:
                    led.supersede(tenant, subject, old, new)
                for old in retract:
                    led.delete_fact(tenant, subject, old, reason="a duplicate of the current total")
    return active


def questions(n: int = 64) -> list[str]:
    """Questions whose content words each match a few dozen events of a long history."""
    return [f"What did the customer say about the {WORDS[i * 37 % 1728]} and the {WORDS[i * 91 % 1728]}?"
            for i in range(n)]
