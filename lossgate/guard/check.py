"""The checks of each guard rule kind against a subject's ledger (see :class:`~lossgate.model.records.GuardRule`)."""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from typing import Any

from lossgate.errors import InvalidInput
from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.fence.lexicon import NEGATION_CUE
from lossgate.guard.fields import number_at, text_of, values_at
from lossgate.model.derived_records import Refusal
from lossgate.model.records import Conflict, Fact, GuardRule
from lossgate.model.registry import Registry
from lossgate.model.values import Money
from lossgate.model.wording import fact_line

__all__ = ["check_action", "authorizes", "forbids"]

# A predicate's words that say what kind of fact it is, not what it is about
# ("food.peanuts_allowed" names peanuts).
_KIND_WORDS = content_stems(
    "allowed allow permitted ok okay limit max maximum min minimum cap scope preference "
    "preferred setting value flag enabled"
)
# Where a qualifier's condition starts ("email before 9am" names email, before 9am).
_CONDITION = re.compile(
    r"\b(?:only|after|before|unless|until|if|except|when|while|during|within|provided)\b", re.IGNORECASE
)
_TRUSTED = ("user", "system")


def _line(f: Fact) -> str:
    """A fact as a refusal names it: its fact line without the summary's "- "."""
    return fact_line(f).removeprefix("- ")


def authorizes(f: Fact) -> bool:
    """Whether ``f`` may authorize an action: asserted, by the user or the system (and, as
    :func:`check_action` adds, resting on no tool or untrusted event). A tool's output, an
    untrusted source, a quote or a speculation never does."""
    return f.authority in _TRUSTED and f.modality == "asserted"


def forbids(f: Fact) -> bool:
    """Whether ``f`` forbids what it names: a ``false`` flag, or a negative fact."""
    return f.polarity == "negative" or (f.value_type == "bool" and f.value is False)


def check_action(
    action: dict[str, Any],
    facts: list[Fact],
    conflicts: list[Conflict],
    registry: Registry,
    *,
    low_trust: frozenset[str] = frozenset(),
) -> tuple[list[Refusal], list[str], list[str]]:
    """Every refusal of ``action`` by the registry's guard rules, the names of the rules that
    read a field it has, and the ids of the facts those rules read with their source events.
    ``facts``: the subject's active facts; ``conflicts``: its open ones; ``low_trust``: the
    ids of its tool and untrusted events (a fact resting on one authorizes nothing)."""
    refusals: list[Refusal] = []
    rules: list[str] = []
    read: dict[str, None] = {}
    active = {f.fact_id: f for f in facts if f.status == "active"}
    trusted = {i for i, f in active.items() if authorizes(f) and not set(f.source_event_ids) & low_trust}
    for rule in registry.guards:
        found = values_at(action, rule.field)
        if not found:
            continue
        rules.append(rule.name)
        mine = [f for f in active.values() if rule.reads(f.predicate)]
        read.update(dict.fromkeys(i for f in mine for i in (f.fact_id, *f.source_event_ids)))
        refusals += _in_conflict(rule, found, active, [c for c in conflicts if rule.reads(c.predicate)])
        if rule.kind == "excludes":
            refusals += _excludes(rule, found, mine, registry)
        elif rule.kind == "at_most":
            refusals += _at_most(rule, action, found, mine, trusted)
        else:
            refusals += _permits(rule, found, mine, trusted)
    return refusals, rules, list(read)


def _refusal(rule: GuardRule, kind: str, where: str, value: Any, detail: str, f: Fact | None = None) -> Refusal:
    if f is None:
        return Refusal(rule=rule.name, kind=kind, field=where, value=value, detail=detail)
    return Refusal(
        rule=rule.name,
        kind=kind,
        field=where,
        value=value,
        detail=detail,
        fact_id=f.fact_id,
        predicate=f.predicate,
        fact_value=f.value,
        qualifiers=dict(f.qualifiers),
        source_event_ids=f.source_event_ids,
    )


def _in_conflict(
    rule: GuardRule, found: list[tuple[str, Any]], active: dict[str, Fact], conflicts: list[Conflict]
) -> list[Refusal]:
    out = []
    for c in conflicts:
        if c.status != "unresolved":
            continue
        sides = tuple(_line(active[i]) for i in c.fact_ids if i in active)
        where, value = found[0]
        out.append(
            Refusal(
                rule=rule.name,
                kind="in_conflict",
                field=where,
                value=value,
                detail=f"{c.predicate} is in conflict: {' / '.join(sides)}; settle it before acting",
                predicate=c.predicate,
                conflict_id=c.conflict_id,
                sides=sides,
                source_event_ids=tuple(e for i in c.fact_ids if i in active for e in active[i].source_event_ids),
            )
        )
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
    """The first of ``phrases`` that ``text`` names (every word of it, by stem; both read
    NFKC-normalised and case-folded)."""
    stems = content_stems(_folded(text))
    for phrase in phrases:
        want = content_stems(_folded(phrase))
        if want and want <= stems:
            return phrase
    return None


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _excludes(rule: GuardRule, found: list[tuple[str, Any]], facts: list[Fact], registry: Registry) -> list[Refusal]:
    out = []
    for f in facts:
        if not forbids(f):
            continue
        names = _names(rule, f, registry)
        for where, value in found:
            hit = "any value" if names is None else _named(text_of(value), names)
            if hit is not None:
                out.append(
                    _refusal(rule, "excludes", where, value, f"{where} names {hit!r}, which {_line(f)} forbids", f)
                )
    return out


def _amount(f: Fact) -> tuple[Decimal, str | None] | None:
    value = f.value
    if isinstance(value, Money):
        return value.amount, value.currency
    if f.value_type in ("int", "decimal") and isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return Decimal(value), None
    return None


def _at_most(
    rule: GuardRule, action: dict[str, Any], found: list[tuple[str, Any]], facts: list[Fact], trusted: set[str]
) -> list[Refusal]:
    out = []
    limits = [(f, a) for f in facts if not forbids(f) and (a := _amount(f)) is not None]
    authorizing = [(f, a) for f, a in limits if f.fact_id in trusted]
    currency = None
    if rule.currency_field:
        given = values_at(action, rule.currency_field) or [(rule.currency_field, None)]
        where, unit = given[0]
        if not isinstance(unit, str) or len(given) != 1:
            raise InvalidInput(f"action field {where}: expected one currency code, got {unit!r:.80}")
        currency = _folded(unit).strip().upper()
    met: list[str] = []
    if rule.conditions_field:
        try:
            met = [text_of(v) for _, v in values_at(action, rule.conditions_field)]
        except InvalidInput:
            met = []  # no condition said to be met
    met = [m for m in met if not NEGATION_CUE.search(m)]  # "not after supervisor review" meets nothing
    for where, value in found:
        number = number_at(where, value)
        if number < 0:
            out.append(_refusal(rule, "at_most", where, value, f"{where} is {number}: an amount below zero"))
            continue
        if not authorizing:
            shown = "; ".join(_line(f) for f, _ in limits)
            detail = f"no fact the user or the system asserted, from trusted sources, sets a limit for {where}" + (
                f" (not this, from an untrusted, tool or quoted source: {shown})" if shown else ""
            )
            out.append(_refusal(rule, "at_most", where, value, detail, limits[0][0] if limits else None))
            continue
        for f, (limit, unit) in authorizing:
            if unit is not None and rule.currency_field and currency != unit:
                out.append(
                    _refusal(
                        rule,
                        "at_most",
                        where,
                        value,
                        f"{where} is in {currency}, and {_line(f)} sets the limit in {unit}",
                        f,
                    )
                )
            elif number > limit:
                out.append(
                    _refusal(rule, "at_most", where, value, f"{where} is {number}, above the limit {_line(f)} sets", f)
                )
            for key, condition in f.qualifiers:
                if key != rule.qualifier and key != "condition" and not _CONDITION.search(condition):
                    continue
                if not any(_named(m, [_CONDITION.sub(" ", condition)]) for m in met):
                    shown = rule.conditions_field or "(no conditions field)"
                    out.append(
                        _refusal(
                            rule,
                            "condition_unmet",
                            where,
                            value,
                            f"{_line(f)} holds only {condition!r}, and {shown} does not say it was met",
                            f,
                        )
                    )
    return out


def _permits(rule: GuardRule, found: list[tuple[str, Any]], facts: list[Fact], trusted: set[str]) -> list[Refusal]:
    """A value is permitted only as a trusted fact names it, whole: "staging" for "staging
    only", never "staging-but-production" (the qualifier's condition words are not part of
    the name)."""
    out = []
    for where, value in found:
        text = _whole(text_of(value))
        refused = False
        for f in facts:
            name = (
                dict(f.qualifiers).get(rule.qualifier)
                if rule.qualifier
                else (None if f.value_type == "bool" else str(f.value))
            )
            if name is None or _whole(_CONDITION.split(name, maxsplit=1)[0] or name) != text:
                continue
            if forbids(f):
                out.append(
                    _refusal(rule, "excludes", where, value, f"{where} is {text!r}, which {_line(f)} forbids", f)
                )
                refused = True
            elif f.fact_id in trusted:
                break
        else:
            if not refused:
                shown = [_line(f) for f in facts if not forbids(f) and f.fact_id not in trusted]
                detail = (
                    f"no fact the user or the system asserted, from trusted sources, permits {where} = {text!r}"
                    + (f" (not these: {'; '.join(shown)})" if shown else "")
                )
                out.append(_refusal(rule, "permits", where, value, detail, facts[0] if facts else None))
    return out


def _whole(text: str) -> str:
    """A value compared whole: NFKC, case-folded, its spacing collapsed."""
    return " ".join(_folded(text).split())
