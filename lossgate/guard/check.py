"""The checks of each guard rule kind against a subject's ledger (see :class:`~lossgate.records.GuardRule`)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from lossgate.derived import Refusal
from lossgate.gate.atoms.statements import content_stems
from lossgate.guard.fields import number_at, text_of, values_at
from lossgate.records import Conflict, Fact, GuardRule
from lossgate.registry import Registry
from lossgate.render import fact_line
from lossgate.values import Money

__all__ = ["check_action", "authorizes", "forbids"]

# A predicate's words that say what kind of fact it is, not what it is about
# ("food.peanuts_allowed" names peanuts).
_KIND_WORDS = content_stems("allowed allow permitted ok okay limit max maximum min minimum cap scope preference "
                            "preferred setting value flag enabled")
# Where a qualifier's condition starts ("email before 9am" names email, before 9am).
_CONDITION = re.compile(r"\b(?:only|after|before|unless|until|if|except|when|while|during|within|provided)\b",
                        re.IGNORECASE)
_TRUSTED = ("user", "system")


def authorizes(f: Fact) -> bool:
    """Whether ``f`` may authorize an action: asserted, by the user or the system. A tool's
    output, an untrusted source, a quote or a speculation never does."""
    return f.authority in _TRUSTED and f.modality == "asserted"


def forbids(f: Fact) -> bool:
    """Whether ``f`` forbids what it names: a ``false`` flag, or a negative fact."""
    return f.polarity == "negative" or (f.value_type == "bool" and f.value is False)


def check_action(action: dict[str, Any], facts: list[Fact], conflicts: list[Conflict],
                 registry: Registry) -> tuple[list[Refusal], list[str]]:
    """Every refusal of ``action`` by the registry's guard rules, and the names of the rules
    that read a field it has. ``facts``: the subject's active facts; ``conflicts``: its open
    ones."""
    refusals: list[Refusal] = []
    read: list[str] = []
    active = {f.fact_id: f for f in facts if f.status == "active"}
    for rule in registry.guards:
        found = values_at(action, rule.field)
        if not found:
            continue
        read.append(rule.name)
        mine = [f for f in active.values() if rule.reads(f.predicate)]
        refusals += _in_conflict(rule, found, active, [c for c in conflicts if rule.reads(c.predicate)])
        if rule.kind == "excludes":
            refusals += _excludes(rule, found, mine, registry)
        elif rule.kind == "at_most":
            refusals += _at_most(rule, action, found, mine)
        else:
            refusals += _permits(rule, found, mine)
    return refusals, read


def _refusal(rule: GuardRule, kind: str, where: str, value: Any, detail: str, f: Fact | None = None) -> Refusal:
    if f is None:
        return Refusal(rule=rule.name, kind=kind, field=where, value=value, detail=detail)
    return Refusal(rule=rule.name, kind=kind, field=where, value=value, detail=detail, fact_id=f.fact_id,
                   predicate=f.predicate, fact_value=f.value, qualifiers=dict(f.qualifiers),
                   source_event_ids=f.source_event_ids)


def _in_conflict(rule: GuardRule, found: list[tuple[str, Any]], active: dict[str, Fact],
                 conflicts: list[Conflict]) -> list[Refusal]:
    out = []
    for c in conflicts:
        if c.status != "unresolved":
            continue
        sides = tuple(fact_line(active[i]) for i in c.fact_ids if i in active)
        where, value = found[0]
        out.append(Refusal(rule=rule.name, kind="in_conflict", field=where, value=value,
                           detail=f"{c.predicate} is in conflict: {' / '.join(sides)}; settle it before acting",
                           predicate=c.predicate, conflict_id=c.conflict_id, sides=sides,
                           source_event_ids=tuple(e for i in c.fact_ids if i in active
                                                  for e in active[i].source_event_ids)))
    return out


def _names(rule: GuardRule, f: Fact, registry: Registry) -> list[str] | None:
    """What ``f`` names for ``rule``: phrases a field's text is matched against; ``None`` for
    everything (a forbidding fact without the rule's qualifier: ``contact.allowed = false``
    with no channel forbids every channel)."""
    if rule.qualifier:
        given = dict(f.qualifiers).get(rule.qualifier)
        if given is None:
            return None
        head = _CONDITION.split(given, maxsplit=1)[0].strip()
        return [head or given]
    names: list[str] = []
    if isinstance(f.value, str) and f.value_type != "bool":
        names.append(f.value)
    last = f.predicate.rpartition(".")[2].replace("_", " ")
    if content_stems(last) - _KIND_WORDS:
        names.append(" ".join(w for w in last.split() if not content_stems(w) <= _KIND_WORDS))
    spec = registry.predicates.get(f.predicate)
    names += list(spec.synonyms) if spec else []
    return names


def _named(text: str, phrases: list[str]) -> str | None:
    """The first of ``phrases`` that ``text`` names (every word of it, by stem)."""
    stems = content_stems(text)
    for phrase in phrases:
        want = content_stems(phrase)
        if want and want <= stems:
            return phrase
    return None


def _excludes(rule: GuardRule, found: list[tuple[str, Any]], facts: list[Fact], registry: Registry) -> list[Refusal]:
    out = []
    for f in facts:
        if not forbids(f):
            continue
        names = _names(rule, f, registry)
        for where, value in found:
            hit = "any value" if names is None else _named(text_of(value), names)
            if hit is not None:
                out.append(_refusal(rule, "excludes", where, value,
                                    f"{where} names {hit!r}, which {fact_line(f)} forbids", f))
    return out


def _amount(f: Fact) -> tuple[Decimal, str | None] | None:
    value = f.value
    if isinstance(value, Money):
        return value.amount, value.currency
    if f.value_type in ("int", "decimal") and isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return Decimal(value), None
    return None


def _at_most(rule: GuardRule, action: dict[str, Any], found: list[tuple[str, Any]], facts: list[Fact]) -> list[Refusal]:
    out = []
    limits = [(f, a) for f in facts if not forbids(f) and (a := _amount(f)) is not None]
    trusted = [(f, a) for f, a in limits if authorizes(f)]
    currency = None
    if rule.currency_field:
        given = values_at(action, rule.currency_field)
        currency = str(given[0][1]).upper() if given else None
    met = [text_of(v) for _, v in values_at(action, rule.conditions_field)] if rule.conditions_field else []
    for where, value in found:
        number = number_at(where, value)
        if not trusted:
            shown = "; ".join(fact_line(f) for f, _ in limits)
            detail = (f"no fact the user or the system asserted sets a limit for {where}"
                      + (f" (not from an untrusted, tool or quoted source: {shown})" if shown else ""))
            out.append(_refusal(rule, "at_most", where, value, detail, limits[0][0] if limits else None))
            continue
        for f, (limit, unit) in trusted:
            if unit is not None and currency is not None and currency != unit:
                out.append(_refusal(rule, "at_most", where, value,
                                    f"{where} is in {currency}, and {fact_line(f)} sets the limit in {unit}", f))
            elif number > limit:
                out.append(_refusal(rule, "at_most", where, value,
                                    f"{where} is {number}, above the limit {fact_line(f)} sets", f))
            for key, condition in f.qualifiers:
                if key != rule.qualifier and key != "condition" and not _CONDITION.search(condition):
                    continue
                if _named(" ".join(met), [_CONDITION.sub(" ", condition)]) is None:
                    shown = rule.conditions_field or "(no conditions field)"
                    out.append(_refusal(rule, "condition_unmet", where, value,
                                        f"{fact_line(f)} holds only {condition!r}, and {shown} does not say it was met",
                                        f))
    return out


def _permits(rule: GuardRule, found: list[tuple[str, Any]], facts: list[Fact]) -> list[Refusal]:
    out = []
    for where, value in found:
        text = text_of(value)
        against = [f for f in facts if forbids(f)]
        for f in against:
            names = [dict(f.qualifiers).get(rule.qualifier, "")] if rule.qualifier else [str(f.value)]
            if _named(text, [_CONDITION.split(n, maxsplit=1)[0] for n in names if n]) is not None:
                out.append(_refusal(rule, "excludes", where, value, f"{where} is {text!r}, which {fact_line(f)} forbids",
                                    f))
        allowing = [f for f in facts if not forbids(f)]
        granted = None
        for f in allowing:
            name = dict(f.qualifiers).get(rule.qualifier) if rule.qualifier else str(f.value)
            if name is not None and authorizes(f) and _named(text, [_CONDITION.split(name, maxsplit=1)[0] or name]):
                granted = f
                break
        if granted is None and not any(r.field == where for r in out):
            shown = [fact_line(f) for f in allowing if not authorizes(f)]
            detail = (f"no fact the user or the system asserted permits {where} = {text!r}"
                      + (f" (not from an untrusted, tool or quoted source: {'; '.join(shown)})" if shown else ""))
            out.append(_refusal(rule, "permits", where, value, detail, allowing[0] if allowing else None))
    return out
