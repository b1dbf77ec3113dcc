"""Meaning-preserving rewrites: edits the gate must *not* flag.

Each rewrite yields variants of a correct case that say exactly the same
thing: the gate's result on a variant must equal its result on the original
(same outcome, same violations, same losses), or it is a false alarm.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lossgate.evaluation import textops as T
from lossgate.gate.casefile import GateCase, parse_artifact
from lossgate.gate.preserve import build_must_preserve

__all__ = ["Variant", "Rewrite", "REWRITES"]


@dataclass(frozen=True)
class Variant:
    """A rewritten case (its snapshot and artifact may both differ in form)."""

    rewrite: str
    case_id: str
    label: str
    case: GateCase


@dataclass(frozen=True)
class Rewrite:
    name: str
    description: str
    generate: Callable[[GateCase], Iterator[Variant]]


def _with(case: GateCase, **update: Any) -> GateCase:
    return GateCase(**{**case.__dict__, **update})


def _summary(case: GateCase, rewrite: str, label: str, text: str) -> Iterator[Variant]:
    if text != case.artifact.summary:
        yield Variant(
            rewrite, case.case_id, label, _with(case, artifact=case.artifact.model_copy(update={"summary": text}))
        )


def reorder_claims(case: GateCase) -> Iterator[Variant]:
    claims = case.artifact.claims
    if len(claims) > 1:
        for label, order in (("reversed", claims[::-1]), ("rotated", claims[1:] + claims[:1])):
            yield Variant(
                "reorder_claims",
                case.case_id,
                label,
                _with(case, artifact=case.artifact.model_copy(update={"claims": order})),
            )


def reorder_sentences(case: GateCase) -> Iterator[Variant]:
    parts = T.sentences(case.artifact.summary)
    if len(parts) > 1:
        yield from _summary(case, "reorder_sentences", "reversed", T.join_sentences(parts[::-1]))


def money_format(case: GateCase) -> Iterator[Variant]:
    text = case.artifact.summary
    money = [a for a in T.atoms_of(text) if a.kind == "money"]
    if not money:
        return
    for form in range(3):
        out = text
        for a in sorted(money, key=lambda a: -a.start):
            forms = T.money_forms(a.key)
            out = T.replace_span(out, a.start, a.end, forms[min(form, len(forms) - 1)])
        yield from _summary(case, "money_format", ("$14,250", "14,250 USD", "USD 14,250.00")[form], out)


def date_format(case: GateCase) -> Iterator[Variant]:
    text = case.artifact.summary
    yield from _summary(case, "date_format", "ISO -> March 25, 2026", T.iso_to_named(text))
    yield from _summary(case, "date_format", "March 25, 2026 -> ISO", T.named_to_iso(text))


def _reverse_maps(node: Any) -> Any:
    """Reverse the key order of every object and every list of strings (ids) in a document."""
    if isinstance(node, dict):
        return {k: _reverse_maps(node[k]) for k in reversed(list(node))}
    if isinstance(node, list):
        items = [_reverse_maps(v) for v in node]
        return items[::-1] if all(isinstance(v, str) for v in items) else items
    return node


def key_order(case: GateCase) -> Iterator[Variant]:
    doc = _reverse_maps(copy.deepcopy(case.document["artifact"]))
    art = parse_artifact(doc, case.snapshot.tenant_id, case.snapshot.subject_id, case.registry)
    yield Variant(
        "key_order", case.case_id, "qualifier keys, derived_from, open_items reversed", _with(case, artifact=art)
    )


def _respell(value_type: str, value: Any) -> Any:
    """Another JSON spelling of the same typed value, or ``None`` if there is none."""
    if value_type == "money" and isinstance(value, dict):
        amount = str(value["amount"])
        return {"currency": value["currency"], "amount": amount + (".00" if "." not in amount else "0")}
    if value_type == "decimal":
        text = str(value)
        return text + ("0" if "." in text else ".0")
    if value_type == "duration" and value == "PT30M":
        return "PT1800S"
    return None


def value_spelling(case: GateCase) -> Iterator[Variant]:
    art = case.artifact
    claims = []
    for c in art.claims:
        new = _respell(c.value_type, c.value)
        claims.append(c if new is None else c.model_copy(update={"value": new}))
    if tuple(claims) != art.claims:
        yield Variant(
            "value_spelling",
            case.case_id,
            "14250 -> 14250.00, currency first, PT30M -> PT1800S",
            _with(case, artifact=art.model_copy(update={"claims": tuple(claims)})),
        )
    cited = tuple(
        c.model_copy(update={"derived_from": (*c.derived_from, c.fact_id, *c.derived_from)}) for c in art.claims
    )
    if cited:
        yield Variant(
            "value_spelling",
            case.case_id,
            "derived_from repeats itself and cites the fact id",
            _with(case, artifact=art.model_copy(update={"claims": cited})),
        )


def reorder_inputs(case: GateCase) -> Iterator[Variant]:
    snap = case.snapshot
    snap = snap.model_copy(
        update={"events": snap.events[::-1], "facts": snap.facts[::-1], "conflicts": snap.conflicts[::-1]}
    )
    yield Variant("reorder_inputs", case.case_id, "events, facts and conflicts reversed", _with(case, snapshot=snap))


_FIRST_PERSON = (
    (r"\bI am\b", "the user is"),
    (r"\bI'm\b", "the user is"),
    (r"\bI\b", "the user"),
    (r"\bmy\b", "the user's"),
    (r"\bme\b", "the user"),
    (r"\bMy\b", "The user's"),
)


def _third_person(sentence: str) -> str:
    for pattern, plain in _FIRST_PERSON:
        sentence = re.sub(pattern, plain, sentence)
    return sentence[:1].upper() + sentence[1:]


def restate_sources(case: GateCase) -> Iterator[Variant]:
    """The narrative restates what was said about a critical fact, as a model would: each
    source sentence reported ("According to the supervisor: ..."), or turned from the
    first person to the third ("I am allergic" -> "The user is allergic"). Untrusted and
    tool text is only ever reported, never restated as fact; a side of an open conflict is
    not restated at all (alone, it reads as the conflict's answer)."""
    events = {e.event_id: e for e in case.snapshot.events if e.state == "valid"}
    art = case.artifact
    must = build_must_preserve(case.snapshot, case.registry)
    cited = dict.fromkeys(
        e
        for f in case.snapshot.facts
        if f.status == "active" and must.loss_severity(f.fact_id) == "critical"
        for e in f.source_event_ids
        if e in events
    )
    facts = {f.fact_id: f for f in case.snapshot.facts}
    contested = {
        e
        for c in case.snapshot.conflicts
        if c.status == "unresolved"
        for i in c.fact_ids
        if i in facts
        for e in facts[i].source_event_ids
    }
    for event_id in cited:
        if event_id in contested:
            continue  # one side of an open conflict, reported alone, reads as its answer
        e = events[event_id]
        for sentence in T.sentences(e.text or ""):
            reported = f"According to the {e.actor}: {sentence}"
            yield Variant(
                "restate_sources",
                case.case_id,
                f"{event_id}: reported",
                _with(case, artifact=art.model_copy(update={"summary": f"{art.summary}\n{reported}"})),
            )
            if e.trust not in ("untrusted", "tool") and re.search(r"\b(?:I|I'm|my|me|My)\b", sentence):
                plain = _third_person(sentence)
                yield Variant(
                    "restate_sources",
                    case.case_id,
                    f"{event_id}: third person",
                    _with(case, artifact=art.model_copy(update={"summary": f"{art.summary}\n{plain}"})),
                )


REWRITES: tuple[Rewrite, ...] = (
    Rewrite("reorder_claims", "claims reversed and rotated", reorder_claims),
    Rewrite("reorder_sentences", "summary sentences reversed", reorder_sentences),
    Rewrite("money_format", "$14,250 / 14,250 USD / USD 14,250.00", money_format),
    Rewrite("date_format", "2026-03-25 <-> March 25, 2026", date_format),
    Rewrite("key_order", "qualifier key order, derived_from and open_items order", key_order),
    Rewrite("value_spelling", "equal typed values spelled differently; redundant derived_from", value_spelling),
    Rewrite("reorder_inputs", "snapshot events, facts and conflicts reordered", reorder_inputs),
    Rewrite(
        "restate_sources",
        "the narrative reports a fact's source sentence, or restates it in the third person",
        restate_sources,
    ),
)
