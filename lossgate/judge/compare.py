"""The judge's statements against the ledger: deterministic, like the rest of the gate.

A statement about an active fact (named by id, or by a predicate only one active fact
has) fails the artifact when it:

* states the fact with the other polarity (``polarity_flipped``): a ``False`` value or a
  negative fact is negative;
* states another value (``value_changed``): for an amount or a count, the same number
  and no other; else the value's text within what was said (lower-cased, whitespace and
  currency symbols aside);
* drops a limit the fact carries (a ``condition``, ``environment``, ``scope`` or
  ``channel`` qualifier) from what it says (``qualifiers_changed``): the limit's content
  words must be among the statement's conditions or value;
* changes how sure it is (``modality_changed``): asserted made speculative, or the other way;
* attributes quoted, untrusted or tool text to anyone but where it came from (the user, the
  subject, a person the narrative names), or states it as fact
  (``untrusted_elevated``);
* answers an open conflict (``conflict_resolved_by_compressor``, on the conflict).

A statement about no recorded fact is not judged here: the prose diff and the fence
judge invented content. Every violation's detail starts with ``judge:``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.fence import numbers_in
from lossgate.gate.outcome import Code, Violation
from lossgate.gate.sources import value_forms
from lossgate.judge.model_judge import Statement
from lossgate.model.records import Fact, Snapshot

__all__ = ["judge_violations"]

_LIMITS = frozenset({"condition", "environment", "scope", "channel"})  # qualifiers that restrict a fact
# What names where quoted text came from: said of anything else, it is raised to a person's word.
_SOURCE_WORDS = content_stems(
    "ticket tickets tool tools page pages web website document documents email emails "
    "mail message messages footer form portal file attachment source sources retrieved "
    "untrusted unverified sender quote quoted lookup crm system"
)


def _norm(text: str) -> str:
    return re.sub(r"[\s$€£,]+", " ", text.lower()).strip(" .")


def _values(f: Fact) -> set[str]:
    if f.value is None:
        return set()
    out = {_norm(v) for v in value_forms(f.value_type, f.value)} | {_norm(str(f.value))}
    if f.value_type == "money":
        out |= {_norm(str(f.value.get("amount") if isinstance(f.value, dict) else getattr(f.value, "amount", "")))}
    return {v for v in out if v}


def _same_value(f: Fact, said: str) -> bool:
    """Whether ``said`` states the fact's value: the same number and no other for an amount
    or a count, else the value's text within what was said."""
    if f.value_type in ("money", "int", "decimal"):
        amount = f.value.get("amount") if isinstance(f.value, dict) else getattr(f.value, "amount", f.value)
        return numbers_in(said) == numbers_in(str(amount))
    text = _norm(said)
    return any(v and v in text for v in _values(f))


def _negative(f: Fact) -> bool:
    return f.polarity == "negative" or (f.value_type == "bool" and f.value is False)


def _v(code: Code, subject: str, detail: str) -> Violation:
    return Violation(code=code, subject=subject, severity="critical", detail=f"judge: {detail}")


def judge_violations(statements: Sequence[Statement], snapshot: Snapshot) -> list[Violation]:
    """Violations of the ledger in the judge's ``statements`` (see the module docstring)."""
    active = {f.fact_id: f for f in snapshot.facts if f.status == "active"}
    by_predicate: dict[str, list[Fact]] = {}
    for fact in active.values():
        by_predicate.setdefault(fact.predicate, []).append(fact)
    conflict_of = {i: c.conflict_id for c in snapshot.conflicts if c.status == "unresolved" for i in c.fact_ids}
    out: list[Violation] = []
    for s in statements:
        f = active.get(s.fact_id or "")
        if f is None and s.predicate and len(by_predicate.get(s.predicate, ())) == 1:
            f = by_predicate[s.predicate][0]
        if f is None:
            if s.settles_conflict and s.predicate in {
                c.predicate for c in snapshot.conflicts if c.status == "unresolved"
            }:
                cid = next(
                    c.conflict_id for c in snapshot.conflicts if c.status == "unresolved" and c.predicate == s.predicate
                )
                out.append(_v("conflict_resolved_by_compressor", cid, f"the narrative settles it ({s.value!r})"))
            continue
        said = f"{f.predicate} = {s.value!r}"
        if s.settles_conflict and f.fact_id in conflict_of:
            out.append(
                _v("conflict_resolved_by_compressor", conflict_of[f.fact_id], f"the narrative settles it: {said}")
            )
        low_trust = f.modality == "quoted" or f.authority in ("untrusted", "tool")
        if low_trust:
            # attributed to anyone but where it came from (the user, the subject, "the
            # traveller") it is raised to that person's word
            who_said = content_stems(s.attributed_to or "")
            sources = frozenset().union(
                *(content_stems(f"{e.actor} {e.kind}") for e in snapshot.events if e.event_id in f.source_event_ids)
            )
            by_user = bool(who_said) and not who_said & (sources | _SOURCE_WORDS)
            if by_user or s.modality == "asserted":
                who = f"{s.attributed_to!r}'s" if by_user else "a fact"
                out.append(_v("untrusted_elevated", f.fact_id, f"quoted {f.authority} text stated as {who}: {said}"))
            continue
        if (s.polarity == "negative") != _negative(f):
            out.append(_v("polarity_flipped", f.fact_id, f"the narrative says the opposite: {said}"))
            continue
        stated = s.value is not None and f.value_type != "bool"
        if stated and not _same_value(f, s.value or ""):
            out.append(_v("value_changed", f.fact_id, f"the ledger says {sorted(_values(f))[0]!r}: {said}"))
            continue
        if f.modality != s.modality and s.modality != "quoted":
            out.append(_v("modality_changed", f.fact_id, f"{f.modality} stated as {s.modality}: {said}"))
        if stated or f.value_type == "bool":
            # a limit is kept when its words are among the statement's conditions or value
            # ("after a supervisor review" keeps "after supervisor review")
            kept = content_stems(" ".join([*s.conditions, s.value or ""]))
            lost = [v for k, v in f.qualifiers if k in _LIMITS and not content_stems(v) <= kept]
            if lost:
                out.append(_v("qualifiers_changed", f.fact_id, f"the narrative drops {lost[0]!r}: {said}"))
    return out
