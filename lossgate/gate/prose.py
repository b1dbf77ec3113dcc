"""The prose fact diff: does the summary lose, alter or invent an atom?

Atoms (money, quantities, dates and times, identifiers, contacts, negated
statements, named parties) are extracted with :mod:`lossgate.gate.atoms` from

* the **sources**: the text of each *valid* event of the snapshot, relative
  dates resolved against that event's ``occurred_at``;
* the **summary** of the artifact, with no reference time, less the lines that
  render its own claims (:func:`prose_of`; the contract judges those). A date without a
  year takes the year of the source date with the same day; a relative date
  ("tomorrow") means nothing once the summary is read back, so it only matches
  as a quote of a source that used the same words, and then means what that
  source meant (:func:`~lossgate.gate.sources.anchor_dates`);
* the **structured side**: the values (and qualifier values) of the artifact's
  claims and of the active facts, rendered as text, plus the memory's own names
  (tenant, subject, actors, fact, event and conflict ids) and when each event was
  said (its date, and its time in UTC). A summary may legitimately say what its
  claims say, and when it was said.

A summary atom that is covered but less precise than a source atom ("2400" for
"$2,400", a date for "EOD 2026-03-15") is a loss of precision, judged as
``atom_missing`` of the source atom, not as a change.

Codes (subject: the atom's ``kind:key``):

``atom_changed`` (critical)
    a summary atom is a near miss of a source atom nothing else supports: a
    close number (14250 -> 14205), another currency or unit, a shifted date or
    time, a similar identifier, a negation flipped to the positive statement
    (or back), or a double negation ("not authorized" -> "not unauthorized").
    *Important* (recorded, not failing) when the change is a reworded negation
    that keeps its polarity ("do not call me" -> "do not call on weekends"): the
    extractor cannot tell rewording from narrowing, and the structured claim
    carries the exact qualifiers, which the contract checks. A rewording
    that only renames the subject ("me" -> "the user") is no change at all, and
    neither is a year-less date naming the source's day ("March 6").
``atom_added`` (critical)
    a summary atom that neither the sources nor the structured side support:
    confabulation. Also, whatever else supports it, a summary atom restating the
    value of a superseded or revoked fact that no active fact, and no valid event
    other than that fact's own sources, supports: stale or resurrected content
    (numbers match in any unit or format: "10 seats" restates a value 10). A
    deleted fact's value is purged and its events are out of the view, so it can
    only come back as an ordinary invention. A negated statement the sources do
    not word the same way is supported when it renders a negative claim
    (polarity ``negative`` or a ``False`` value): it shares a content word with
    the claim and its verb comes from the claim or the sources.
``atom_missing`` (important; critical when escalated)
    a source atom that neither the summary nor the structured side carries. A
    shorter summary that drops chatter is an acceptable, recorded loss. It is
    critical when the atom is the value of a critical must-preserve fact whose
    claim the artifact also dropped. Atoms that only ever stated a retired fact's
    value are not missing (dropping stale content is the point), and neither is a
    negation that a negative claim carries.

Known limit: atoms compare as sets. A summary that swaps two values it already
states ("INV-1001 totals $1,452; INV-1002 totals $1,425") changes no atom; the
structured claims bind each value to its qualifiers and catch the same swap. Likewise,
where several source lines say the same negated thing ("they do not want calls"), a
summary that flips one of them to the positive while keeping another can pass: the
negation is still in the summary's set, so nothing reads as lost or changed. A negative
claim of the ledger is checked by the contract either way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from lossgate.gate.atoms import Atom, AtomChange, AtomKind, extract_atoms, is_affirmation
from lossgate.gate.atoms.diff import AtomSet, diff_sets
from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.outcome import Code, Severity, Violation
from lossgate.gate.preserve import MustPreserve
from lossgate.gate.sources import (
    Key,
    ProseInputs,
    anchor_dates,
    claim_atoms,
    key_of,
    label_of,
    prose_inputs,
    token_of,
    value_atoms,
    value_forms,
)
from lossgate.gate.superseded import has_marker, strip_markers
from lossgate.model.records import ArtifactBody, Snapshot
from lossgate.model.trusted import trusted
from lossgate.model.wording import claim_lines, conflict_line, event_line, header_line, ledger_line_predicates

__all__ = ["check_prose", "prose_of", "ProseInputs", "prose_inputs", "dropped_labels"]

_NEG_PREFIXES = ("un", "in", "im", "dis", "non", "ir", "il")
_NUMERIC = frozenset({"money", "quantity", "percent"})
_NEGATION_ONLY: tuple[AtomKind, ...] = ("negation",)
# Words a summary uses for the subject where the source said "I" or "me".
_SELF = frozenset({"user", "customer", "client", "subject", "requester", "member"})
# A negation that frames what the memory holds rather than stating a new fact: a contrast
# ("an allergy, not just a dislike"), exclusivity ("and nowhere else"), a bound on a number
# the diff compares anyway ("never waits more than 30 minutes").
_FRAMING = re.compile(
    r"^(?:not|never|no)\s+(?:just|merely|simply|only|as)\b|\b(?:else|other|others)\b"
    r"|\b(?:more|longer|later|fewer|less|over|above|beyond|exceed\w*)\b"
)
# Verbs that negate by themselves: negated, they state the other polarity.
_UNDOING_VERBS = content_stems(
    "dissent refuse deny object oppose reject decline forbid prohibit ban lack fail avoid "
    "stop withhold withdraw revoke cancel disagree disallow disapprove exclude block"
)
# How a summary says that something is still open (about an open conflict or a speculation).
_OPEN_STATUS = content_stems(
    "settled decided resolved clear confirmed reconciled final finalised finalized "
    "overrides overridden replaces replaced known sure agreed determined"
)
# How a summary disowns quoted or untrusted text ("not an instruction from the user").
_DISOWNING = content_stems(
    "instruction instructions rule order command request user verified trusted trust something treat record assume"
)


def _negative_claims(artifact: ArtifactBody) -> list[set[str]]:
    """Content stems of each negative claim (predicate words, qualifier values, string value)."""
    out = []
    for c in artifact.claims:
        if c.polarity == "negative" or (c.value_type == "bool" and c.value is False):
            words = [c.predicate.replace(".", " ").replace("_", " "), *(v for _, v in c.qualifiers)]
            if isinstance(c.value, str):
                words.append(c.value)
            out.append(set(content_stems(" ".join(words))) - _SELF)
    return out


def _states_negative_claim(a: Atom, negative: list[set[str]], inp: ProseInputs) -> bool:
    """A negated statement renders a negative claim when it shares a content word with the
    claim and its verb comes from the claim or the sources ("never serve peanuts" for
    ``food.peanuts_allowed = false`` after "please never serve me peanuts"); a new verb
    ("does not dissent") is a new statement. The sources' vocabulary is read only when the
    claim leaves the verb open (it stems every statement of the snapshot)."""
    head, *rest = a.key.split("|")[1:]
    words = ({head, *rest}) - _SELF
    return any(words & claim and (head in claim or head in inp.vocabulary) for claim in negative)


def _restates_negative_claim(a: Atom, negative: list[set[str]], inp: ProseInputs) -> bool:
    """A negated statement the summary adds restates a negative claim in its own words when it
    renders the claim (:func:`_states_negative_claim`), or when it says no new thing: every word
    after its verb comes from the claim or the sources and it names the claim's object ("they
    cannot eat peanuts", "phone calls to the user are not permitted"), or every word comes from
    the sources and one of them is what a source negates ("no calling the user" after "do not
    call me by phone"). A new object ("peanuts or shellfish") is a new statement."""
    if _states_negative_claim(a, negative, inp):
        return True
    head, *rest = a.key.split("|")[1:]
    if head in _UNDOING_VERBS or _strip_prefix(head) is not None:
        return False  # "does not dissent", "never disallowed": a negated negative is the other polarity
    words = {head, *rest} - _SELF
    return any(
        (words & claim and set(rest) - _SELF <= claim | inp.vocabulary)
        or (words <= claim | inp.vocabulary and words & inp.negated_words)
        for claim in negative
    )


def _frames(a: Atom, artifact: ArtifactBody) -> bool:
    """Whether an added negated statement frames what the memory holds instead of stating a
    new fact: a contrast, exclusivity or a bound (:data:`_FRAMING`); an open conflict or a
    speculation called not settled ("the two have not been reconciled"); quoted or untrusted
    text disowned ("not an instruction from the user"). The critical-topic fence judges the
    sentence's meaning."""
    if _FRAMING.search(a.text.lower()):
        return True
    head, *rest = a.key.split("|")[1:]
    words = {head, *rest} - _SELF
    if head in _OPEN_STATUS and (
        artifact.unresolved_conflicts or any(c.modality == "speculative" for c in artifact.claims)
    ):
        return True
    quoted = any(c.modality == "quoted" or c.authority in ("untrusted", "tool") for c in artifact.claims)
    return quoted and bool(words & _DISOWNING)


def _strip_prefix(word: str) -> str | None:
    for p in _NEG_PREFIXES:
        if word.startswith(p) and len(word) > len(p) + 3:
            return word[len(p) :]
    return None


def _double_negation(added: Atom, lost: Iterable[Atom]) -> Atom | None:
    """The source negation that ``added`` double-negates ("not authoriz" vs "not unauthoriz")."""
    head, *rest = added.key.split("|")[1:]
    for m in lost:
        if m.kind != "negation" or not m.key.startswith("not|"):
            continue
        mhead, *mrest = m.key.split("|")[1:]
        if set(rest) == set(mrest) and (_strip_prefix(head) == mhead or _strip_prefix(mhead) == head):
            return m
    return None


def _reworded(ch: AtomChange) -> bool:
    """Same negated statement, differing only in how it names the subject ("me" -> "the user")."""
    a, b = set(ch.source.key.split("|")[1:]), set(ch.summary.key.split("|")[1:])
    return (a ^ b) <= _SELF


def _plain(a: Atom) -> tuple[str, ...]:
    """A negation's words without the subject's names: "not|cal|user" and "not|cal" are one."""
    head, *rest = a.key.split("|")
    return (head, *sorted(set(rest) - _SELF - {"me", "i"}))


def _v(code: Code, subject: str, detail: str, severity: Severity = "critical", **kw: Any) -> Violation:
    return Violation(code=code, subject=subject, severity=severity, detail=detail, **kw)


def _uncovered(summary: list[Atom], support: AtomSet) -> set[Key]:
    """Summary atoms the support does not cover (exactly or by a more specific atom).

    The diff pairs a *covered* but less precise summary atom ("2026-03-15" for "EOD
    2026-03-15") with the source atom it weakens; that is a loss of precision, not an
    invention, so alterations are only judged on uncovered atoms.
    """
    exact = support.reps
    rest = [a for a in summary if key_of(a) not in exact and not is_affirmation(a)]
    if not rest:
        return set()
    rev = diff_sets(AtomSet(rest), support, kinds={a.kind for a in rest})
    return {key_of(a) for a in rev.missing} | {key_of(ch.source) for ch in rev.changed}


def _alterations(
    inp: ProseInputs,
    artifact: ArtifactBody,
    summary: list[Atom],
    summary_set: AtomSet,
    support: AtomSet,
    uncovered: set[Key],
    marked: list[tuple[int, int]],
) -> list[Violation]:
    """atom_changed and atom_added: the summary against everything that may support it."""
    out: list[Violation] = []
    diff = diff_sets(support, summary_set, all_missing=False)  # its missing atoms are _losses' business
    added = list(diff.added)
    for ch in diff.changed:
        if (ch.reason == "negation_changed" and _reworded(ch)) or (
            not is_affirmation(ch.summary) and key_of(ch.summary) not in uncovered
        ):
            continue
        if key_of(ch.source) not in inp.source_keys:
            # A near miss of a structured value only: judge the summary atom on its own.
            if not is_affirmation(ch.summary):
                added.append(ch.summary)
            continue
        # A reworded negation keeps its polarity; the extractor cannot tell rewording from
        # narrowing, and the structured claim carries the qualifiers exactly: record it.
        severity: Severity = "important" if ch.reason == "negation_changed" else "critical"
        out.append(
            _v(
                "atom_changed",
                label_of(ch.summary),
                f"{ch.reason}: source says {ch.source.text!r}, summary says {ch.summary.text!r}",
                severity,
                expected=label_of(ch.source),
                observed=label_of(ch.summary),
            )
        )
    negative = _negative_claims(artifact)
    # Negations pair only with statements, so the other kinds do not change which are lost.
    lost_negations = list(diff_sets(inp.atom_set, summary_set, kinds=_NEGATION_ONLY).missing)
    said = {_plain(a) for a in inp.atom_set.reps.values() if a.kind == "negation"} if added else set()
    for a in added:
        if a.kind == "negation" and _plain(a) in said:
            continue  # a source's negation naming its subject another way ("me" -> "the user")
        if a.kind == "negation":
            twin = _double_negation(a, lost_negations)
            if twin is not None:
                out.append(
                    _v(
                        "atom_changed",
                        label_of(a),
                        f"double negation: source says {twin.text!r}, summary says {a.text!r}",
                        expected=label_of(twin),
                        observed=label_of(a),
                    )
                )
                continue
            if _restates_negative_claim(a, negative, inp) or _frames(a, artifact):
                continue
        out.append(_v("atom_added", label_of(a), f"the sources never say {a.text!r}", observed=label_of(a)))
    for a in summary:
        if any(start <= a.start < end for start, end in marked):
            continue  # told as history, with what holds now: the marker is checked on its own
        stale = inp.stale.get(token_of(a)) if not is_affirmation(a) else None
        if stale:
            out.append(
                _v(
                    "atom_added",
                    label_of(a),
                    f"stale: {a.text!r} states retired fact(s) {', '.join(stale)}",
                    observed=label_of(a),
                )
            )
    return out


def _losses(
    snapshot: Snapshot,
    inp: ProseInputs,
    artifact: ArtifactBody,
    summary: list[Atom],
    claimed: list[Atom],
    must: MustPreserve,
    uncovered: set[Key],
) -> list[Violation]:
    """atom_missing: the sources against the summary and the structured side together."""
    out: list[Violation] = []
    claim_ids = {c.fact_id for c in artifact.claims}
    dropped: dict[Key, list[str]] = {}
    for f in snapshot.facts:
        if f.status == "active" and f.fact_id not in claim_ids and must.loss_severity(f.fact_id) == "critical":
            for a in value_atoms(value_forms(f.value_type, f.value)):
                dropped.setdefault(token_of(a), []).append(f.fact_id)
    negative = _negative_claims(artifact)
    # A number a claim carries is carried in any unit or format ("34 seats" by seats = 34,
    # "14250" by 14250 USD). Matching by number afterwards lets the diff run without the
    # claims' bare numbers, which cover nothing else and would only feed its pairing.
    numbers = {token_of(a) for a in claimed if a.kind in _NUMERIC}
    numbers |= {("num", a.key.partition(" ")[2]) for a in claimed if a.kind == "money"}
    lost = diff_sets(inp.atom_set, AtomSet(summary + [a for a in claimed if a.kind not in ("quantity", "percent")]))
    # A source atom paired with a covered summary atom was only weakened ("EOD" dropped):
    # a loss. One paired with an uncovered atom was altered, which _alterations reports.
    weakened = [
        ch.source for ch in lost.changed if not is_affirmation(ch.summary) and key_of(ch.summary) not in uncovered
    ]
    stale = inp.stale
    for a in [*lost.missing, *weakened]:
        tok = token_of(a)
        if a.kind in _NUMERIC and tok in numbers:
            continue
        if tok in stale or (a.kind == "negation" and _states_negative_claim(a, negative, inp)):
            continue  # stale content is meant to go; a negation a negative claim carries is kept
        facts = dropped.get(tok)
        label = label_of(a)
        # built unvalidated (a digest leaves out hundreds of atoms): the same record as
        # Violation(code=..., subject=..., severity=..., detail=..., expected=...)
        if facts:
            detail = f"{a.text!r} is lost with critical fact(s) {', '.join(sorted(set(facts)))}"
            out.append(_missing(label, "critical", detail))
        else:
            out.append(_missing(label, "important", f"{a.text!r} is in no claim and not in the summary"))
    return out


_MISSING_GIVEN = frozenset({"code", "subject", "severity", "detail", "expected"})


def _missing(label: str, severity: Severity, detail: str) -> Violation:
    """An ``atom_missing`` finding about ``label``, as validation would build it."""
    return trusted(
        Violation,
        _MISSING_GIVEN,
        {
            "code": "atom_missing",
            "subject": label,
            "severity": severity,
            "detail": detail,
            "expected": label,
            "observed": None,
        },
    )


def dropped_labels(losses: Iterable[Violation]) -> list[str]:
    """The source atoms (``kind:key``) that :func:`_losses` found in neither the summary nor
    the structured side: the subjects of its ``atom_missing`` findings, sorted, once each."""
    return sorted({v.subject for v in losses if v.code == "atom_missing"})


def prose_of(artifact: ArtifactBody) -> str:
    """The summary with every line that renders one of the artifact's claims or open conflicts,
    and its header line (``Memory of <subject> (tenant <tenant>).``), blanked out, and without
    the superseded-value markers lossgate appends to lines (:mod:`lossgate.gate.superseded`).

    Such a line says exactly what its claim says, and the contract checks the claim; read
    as prose its words would only pair with whatever else the conversation said (an
    untrusted "refunds need no review" against ``condition=after supervisor review``, or a
    source "no peanuts" that fell out of the budget window against the line that carries
    it as ``food.peanuts_allowed: false``). Lines are blanked, not removed, so clauses never
    join across them."""
    rendered = structured_lines(artifact)
    return "\n".join("" if line in rendered else line for line in strip_markers(artifact.summary).split("\n"))


def structured_lines(artifact: ArtifactBody) -> frozenset[str]:
    """The lines of ``artifact``'s summary that lossgate writes for its structure: the header,
    one line per claim and one per open conflict, and each :func:`~lossgate.model.wording.ledger_line`
    in its narrative that names only predicates it claims (it states no value: the claim's
    line does)."""
    predicate_of = {c.fact_id: c.predicate for c in artifact.claims}
    conflicts = {
        conflict_line(predicate_of[r.fact_ids[0]], r.fact_ids)
        for r in artifact.unresolved_conflicts
        if r.fact_ids[0] in predicate_of
    }
    claimed = set(predicate_of.values())
    spoken = {
        ln for ln in artifact.summary.split("\n") if (names := ledger_line_predicates(ln)) and claimed.issuperset(names)
    }
    return frozenset(
        claim_lines(artifact.claims) | conflicts | spoken | {header_line(artifact.tenant_id, artifact.subject_id)}
    )


def quotes_as_said(prose: str, snapshot: Snapshot) -> str:
    """``prose`` with each line that quotes one of the snapshot's events as a summary writes it
    (:func:`~lossgate.model.wording.event_line`: ``- actor: text``, the text on one line) read as
    that event's own text, as the sources are read.

    A quote says what it quotes; read with its ``- actor:`` lead, the extractor would join
    the lead to the first clause and find atoms the source, read from the start of its
    text, does not have (``- user: $1e999 NaN P1D`` names a party "NaN P"; the source
    does not), and a text whose spacing the line collapses reads otherwise (``+00  000000``
    is two numbers, ``+00 000000`` a phone number): the deterministic compressor's own
    output would then fail for such texts on every attempt. The quote keeps its own lines,
    so clauses never join across it."""
    return "\n".join(_said_lines(prose, snapshot))


def _said_lines(prose: str, snapshot: Snapshot) -> list[str]:
    """:func:`quotes_as_said`, line by line (one entry per line of ``prose``)."""
    quoted = {event_line(e): e.text for e in snapshot.events if e.text}
    lines = prose.split("\n")
    return [quoted.get(line, line) for line in lines] if quoted else lines


def _marked_spans(artifact: ArtifactBody, said: list[str]) -> list[tuple[int, int]]:
    """Where, in the prose read (``said``, one entry per summary line), the lines that carry
    lossgate's marker lie: such a line tells a retired value as history, with what holds now
    (:mod:`lossgate.gate.superseded`, whose markers the gate checks line by line)."""
    spans, at = [], 0
    for line, text in zip(artifact.summary.split("\n"), said, strict=False):
        if "[" in line and has_marker(line):
            spans.append((at, at + len(text)))
        at += len(text) + 1
    return spans


def check_prose(
    snapshot: Snapshot,
    artifact: ArtifactBody,
    must_preserve: MustPreserve,
    *,
    inputs: ProseInputs | None = None,
) -> list[Violation]:
    """Prose fact-diff violations of ``artifact.summary`` against the snapshot (unordered).

    ``inputs`` are the snapshot's atoms from :func:`prose_inputs`, to reuse across artifacts.
    """
    inp = inputs or prose_inputs(snapshot)
    said = _said_lines(prose_of(artifact), snapshot)
    summary = anchor_dates(extract_atoms("\n".join(said)), inp)
    carried, variants = claim_atoms(artifact)
    support = inp.atom_set.plus(inp.active + inp.times_in(summary) + inp.context(artifact.summary) + carried + variants)
    uncovered = _uncovered(summary, support)
    return _alterations(
        inp, artifact, summary, AtomSet(summary), support, uncovered, _marked_spans(artifact, said)
    ) + _losses(snapshot, inp, artifact, summary, carried, must_preserve, uncovered)
