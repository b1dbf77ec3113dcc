"""The fence's rules: each reads one narrative sentence against its topics' sources and the
ledger, and says why its meaning changed, or None."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from lossgate.gate.atoms import extract_atoms
from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.fence.lexicon import (
    ATTRIBUTION,
    AVOID,
    BOUND,
    CLAUSE,
    CONDITIONS,
    DIRECTIVE,
    DISOWNED,
    DONE,
    DOUBT,
    GRANTS,
    KEEPS,
    KINDS,
    LOW_TRUST,
    MENTION,
    META,
    MOVING,
    NEGATION_CUE,
    NO_NEED,
    ONLY_SCOPES,
    OPEN_RX,
    ORDERING,
    OWED,
    PERMISSION_DENIED,
    PERMITS,
    QUESTION,
    REPORTING,
    RESTRICTIONS,
    RETOLD,
    REVERSED,
    SCOPE,
    SETTLING,
    STANCE_STEMS,
    SUBJECT_NOUNS,
    UNAVOID,
    UNCHANGED,
    UNDOING,
    USER_WORDS,
)
from lossgate.gate.fence.text import Source, conditions, hedged, negations, root, roots, said, stated
from lossgate.gate.fence.topics import Topic
from lossgate.model.records import Event


@dataclass(frozen=True)
class Reading:
    """One narrative sentence, read once, with what its touched topics' sources said."""

    raw: str  # as written
    text: str  # as written, lower case
    low: str  # with its atoms blanked, lower case
    stems: frozenset[str]
    stated: frozenset[str]  # its atoms, words and numbers: does it state a value?
    touched: tuple[Topic, ...]
    said: tuple[Source, ...]  # the source sentences of its topics and those it shares two words with
    ids: tuple[str, ...]  # the events behind ``said``
    cue: bool  # it holds a negation
    before: frozenset[str] = frozenset()  # the sentence it speaks of ("Peanuts? Totally fine."): its stems

    def restated(self, least: int = 2) -> list[Source]:
        """The source sentences it shares ``least`` content words with."""
        return [src for src in self.said if len(src.stems & self.stems) >= least]


def source_index(sources: dict[str, tuple[Source, ...]]) -> dict[str, list[tuple[str, int]]]:
    """Which source sentences (event id, position) use each stem: built once per gate run."""
    index: dict[str, list[tuple[str, int]]] = {}
    for e, srcs in sources.items():
        for i, src in enumerate(srcs):
            for w in src.stems:
                index.setdefault(w, []).append((e, i))
    return index


def read(
    raw: str,
    sentence: str,
    touched: list[Topic],
    sources: dict[str, tuple[Source, ...]],
    index: dict[str, list[tuple[str, int]]],
    before: frozenset[str] = frozenset(),
) -> Reading:
    stems = content_stems(sentence)
    ids = tuple(dict.fromkeys(e for t in touched for e in t.events))
    # A sentence often joins a topic to what surrounds it: the source sentences it shares two
    # content words with count as said, too.
    shared = Counter(hit for w in stems for hit in index.get(w, ()))
    near = [e for (e, _), n in shared.items() if n >= 2]
    ids = tuple(dict.fromkeys(ids + tuple(near)))
    low = sentence.lower()
    return Reading(
        raw,
        raw.lower(),
        low,
        stems,
        stated(raw),
        tuple(touched),
        tuple(src for e in ids for src in sources.get(e, ())),
        ids,
        bool(NEGATION_CUE.search(low)),
        before,
    )


def polarity(r: Reading) -> str | None:
    """A negation turned around: a word the sources affirm, negated; a value or an obligation
    denied; a condition reversed; a prohibition narrowed; a source's negation dropped; a
    negative fact stated without one."""
    source_negations = [n.split("|")[1:] for src in r.said for n in src.negations]
    scoped_sources = [n.split("|")[1:] for src in r.said if src.conditions for n in src.negations]
    heads = {n[0] for n in source_negations}
    used = frozenset().union(*(src.stems for src in r.said))
    affirmed = used - heads
    topical = frozenset().union(*(t.key | t.context | t.value for t in r.touched))
    positive = frozenset().union(*(t.key | t.value for t in r.touched if not t.negated and not t.quoted))
    free = roots(ATTRIBUTION | SUBJECT_NOUNS | frozenset().union(*(t.key for t in r.touched)))
    # "not more than $50 without review" bounds what a source allows: not a flip
    bounded = bool(BOUND.search(r.low))
    negative = any(t.negated for t in r.touched)
    # what a positive fact names beside a negative one of the same predicate ("email" / "phone")
    forbidding = frozenset().union(*(t.names | t.object | t.forbidden for t in r.touched if t.negated))
    barred = {t.predicate for t in r.touched if t.negated}
    allowed_names = frozenset().union(
        *(t.names for t in r.touched if not t.negated and not t.quoted and (t.allows or t.predicate in barred))
    )
    allowed_names -= forbidding
    unavoided = bool(UNAVOID.search(r.low))  # "no longer allergic": a double negative allows
    for t in r.touched:  # "the user is still allergic to peanuts" where peanuts are now allowed
        if (
            t.allows
            and (t.names - forbidding) & r.stems
            and not forbidding & r.stems
            and AVOID.search(r.low)
            and not r.cue
        ):
            return "states an allowed fact as forbidden"
    if negative and UNAVOID.search(r.low):  # "not allergic to peanuts any more"
        return "negates what a source affirms"
    if any(t.obligation for t in r.touched) and NO_NEED.search(r.low):
        return "an obligation denied"
    # "the customer's id is not cust-880"
    negated_values = {
        f"{a.kind}:{a.key}"
        for a in extract_atoms(r.raw)
        if NEGATION_CUE.search(r.text[max(0, a.start - 16) : a.start])
        and not BOUND.search(r.text[max(0, a.start - 16) : a.start])
    }
    if negated_values and any(t.value & negated_values for t in r.touched if not t.negated):
        return "the fact's value negated"
    # "refunds are not permitted" where a source grants them ("you may refund up to $50")
    if (
        PERMISSION_DENIED.search(r.low)
        and not bounded
        and any(GRANTS.search(src.text) and not src.negations for src in r.restated(1))
    ):
        return "negates a permission a source grants"
    for src in r.restated(1):  # "without supervisor review" for "after supervisor review"
        for _, words in src.conditions:
            for w in words:
                # ("without review, no refund" forbids what the source conditions: no reversal)
                reversed_ = any(
                    REVERSED.search(r.low[: m.start()][-40:]) and not NEGATION_CUE.search(r.low[m.end() :])
                    for m in re.finditer(rf"\b{re.escape(w)}", r.low)
                )
                # ... unless another source says it so ("a tool said to approve refunds without review")
                if reversed_ and not any(
                    REVERSED.search(other.text[: m.start()][-40:])
                    for other in r.said
                    for m in re.finditer(rf"\b{re.escape(w)}", other.text)
                ):
                    return "a condition reversed"
    scoped = roots(content_stems(" ".join(m.group(1) for m in SCOPE.finditer(r.low))))
    for n in negations(r.low):
        head, *rest = n.split("|")[1:]
        mine = roots([head, *rest]) - roots(ATTRIBUTION)
        akin = [m for m in source_negations if roots(m) & mine]
        # a negation on a negative fact agrees with it ("cannot have peanuts")
        if not akin and not bounded and head in affirmed and (head in positive or (not negative and head in topical)):
            return f"negates what a source affirms ({head})"
        # "do not contact the customer by email" where email is allowed and phone is not
        flipped = (mine - roots(forbidding)) & roots(allowed_names)
        if flipped and not bounded and not unavoided:
            return f"negates what a source affirms ({', '.join(sorted(flipped))})"
        # "do not contact by phone on weekends" for "do not contact the customer by phone":
        # all a source's negated words, and a scope no source names
        extra = (mine - free - roots(used)) & scoped
        # (a source negation that sets a condition of its own is restated, not narrowed:
        # "not before nine in the morning" for "don't email me before 9am")
        if (
            extra
            and any(roots(m) - roots(ATTRIBUTION) <= mine for m in akin)
            and not any(m in scoped_sources for m in akin)
        ):
            return f"a negation narrowed: {', '.join(sorted(extra))}"
    avoided = r.cue or bool(AVOID.search(r.low)) or bool(MENTION.search(r.low))
    for t in r.touched:
        if t.negated and t.negated & r.stems and t.object & r.stems and not avoided:
            return "the fact is negative, the sentence states it without a negation"
    for negated in source_negations:
        # a statement ("never serve peanuts"), not a bare noun ("no peanuts"): a sentence
        # that only mentions peanuts asserts nothing about them
        if len(negated) >= 2 and set(negated) <= r.stems and not avoided:
            return "a source's negation dropped"
    return None


def stance(r: Reading) -> str | None:
    """A negative fact (peanuts not allowed) stated as allowed or wanted in new words ("they
    can have peanuts", "calling the user is fine"): the sentence names what the fact forbids,
    gives it a permitting or wanting stance, carries no negation, and restates no word of
    the sources beyond the fact's own key and what they forbid."""
    permits = PERMITS.search(r.low)
    if (
        r.cue
        or AVOID.search(r.low)
        or MENTION.search(r.low)
        or not permits
        or QUESTION.search(r.low[: permits.start()])
    ):
        return None
    for t in r.touched:
        names = (t.object | t.forbidden) & (r.stems | r.before)
        if t.negated and names and not r.stems & (t.context - t.key - t.value - t.forbidden - STANCE_STEMS):
            return "states a negative fact as allowed or wanted"
    return None


def change(r: Reading) -> str | None:
    """A change no source states, or one the ledger records denied. An *undoing* ("no
    longer", "reversed") is fine only where a source sentence it restates says so, or about
    a value the ledger superseded; a *move* ("moved to", "updated") wherever a source or the
    ledger's history tells of a change."""
    undoing, moving = said(UNDOING, r.low), said(MOVING, r.low)
    denied = bool(UNCHANGED.search(r.low)) or any(
        NEGATION_CUE.search(r.low[max(0, m.start() - 24) : m.start()]) for m in MOVING.finditer(r.low)
    )
    restated = r.restated()
    for t in r.touched:
        if t.sides:
            continue  # an open conflict: conflict says it
        if denied and t.changed:
            return "denies a change the ledger records"
        # with history, "the earlier figure was revoked, so $65,000 stands" names what holds
        # a flag that flipped ("no longer allergic" once peanuts are allowed) tells its own change
        told = t.changed and (bool(t.earlier & r.stated) or bool(t.value and t.value <= r.stated) or not t.value)
        # "the original slot was cancelled and it was rescheduled": the ledger's own change told
        told = told or (t.changed and said(RETOLD, r.low))
        if undoing and not (told or any(src.undoes for src in restated)):
            return "a change no source states"
        if moving and not (t.changed or any(src.moves or src.undoes for src in r.said)):
            return "a change no source states"
        if t.obligation and any(
            not OWED.search(r.low[max(0, m.start() - 40) : m.start()])
            and not NEGATION_CUE.search(r.low[max(0, m.start() - 24) : m.start()])
            for m in DONE.finditer(r.low)
        ):
            return "an open obligation called done"
    return None


def condition(r: Reading) -> str | None:
    """A condition dropped that the source sentence the sentence restates sets, a fact's
    conditional qualifier dropped, or a restriction no source sets added. Only a sentence
    that states a touched fact's value restates it: one that mentions a topic ("they
    discussed the refund policy") sets nothing aside."""
    # a value is stated by its words; a flag ("contact.allowed", channel email) by its names,
    # outside a question ("a rule about when they may be emailed" states no rule)
    asks = bool(QUESTION.search(r.low))
    stating = [
        t
        for t in r.touched
        if (t.value and t.value <= r.stated) or (not t.value and not t.quoted and not asks and t.names & r.stems)
    ]
    if not stating or MENTION.search(r.low):
        return None
    words_in = roots(r.stems)
    for t in stating:
        for words in t.conditional:  # "staging only", "after supervisor review"
            if not roots(words) & words_in:
                return f"a condition dropped: {' '.join(sorted(words))}"
    own = conditions(r.low)
    kept = {kind for kind, rx in KEEPS.items() if rx.search(r.low)}
    if re.search(r"[≤<]", r.text):  # "≤$50"
        kept.add("bound")
    best = max((len(src.core & r.stems) for src in r.said), default=0)
    for src in r.said:
        if not src.conditions or not best or len(src.core & r.stems) != best or 2 * best < len(src.core):
            continue
        dropped = [kind for kind, words in src.conditions if kind not in kept and not roots(words) & words_in]
        if dropped:
            return f"a condition dropped: {', '.join(sorted(set(dropped)))}"
    sets = {kind for src in r.said for kind, _ in src.conditions}
    known = roots(
        frozenset().union(*(src.stems for src in r.said), *(t.key for t in r.touched))
        | ATTRIBUTION
        | META
        | SUBJECT_NOUNS
    )
    for name, rx in CONDITIONS.items():
        if name in RESTRICTIONS and rx.search(r.low) and KINDS[name] not in sets:
            words = dict(own).get(KINDS[name], frozenset())
            clause = next((m.group(0) for m in CLAUSE.finditer(r.text) if rx.match(m.group(0))), "")
            # "at least 3 seats", "except weekends": a bound on a number, or a scope in new words
            if (words or re.search(r"[0-9]", clause)) and not roots(words) & known:
                return f"a restriction no source sets: {name}"
    # "if the client signs off", "only for domestic orders": a scope in words no source uses
    scopes = [words for kind, words in own if kind in ("if", "unless")]
    scopes += [content_stems(m.group(1)) for rx in ONLY_SCOPES for m in rx.finditer(r.low)]
    for words in scopes:
        new = roots(words) - known
        if new and new == roots(words):
            return f"a restriction no source sets: {' '.join(sorted(words))}"
    return None


def hedge(r: Reading) -> str | None:
    """A hedge no source sentence it restates has, a speculative fact stated as settled, or a
    settled fact called open."""
    # a hedge counts in a clause about the topic ("they might travel; the allergy stands" does not hedge it)
    topical = frozenset().union(*(t.key | t.context | t.value for t in r.touched))
    is_hedged = any(hedged(part) for part in r.text.split(";") if content_stems(part) & topical or ";" not in r.text)
    restated = r.restated(1)
    # hedging is faithful about an open conflict or a speculation, never about a deadline
    open_ = any(t.sides or t.speculative for t in r.touched) or bool(OPEN_RX.search(r.low))
    if is_hedged and restated and not open_ and not any(src.hedged for src in restated):
        return "a hedge no source has"
    speculative = [t for t in r.touched if t.speculative]
    if speculative and said(SETTLING, r.low):
        return "speculation stated as settled"
    if [t for t in speculative if t.value and t.value <= r.stated] and not is_hedged and not r.stems & REPORTING:
        return "speculation stated as settled"
    if said(DOUBT, r.low) and not any(t.open or t.speculative or t.sides for t in r.touched):
        if not any(src.hedged or DOUBT.search(" ".join(src.stems)) for src in restated):
            return "a settled fact called open"
    return None


def elevated(r: Reading, sources: dict[str, tuple[Source, ...]], events: dict[str, Event]) -> str | None:
    """Words only untrusted or tool text supplies restate that text: it must be reported as what
    its source said, never stated as fact or put in the user's mouth."""
    untrusted = [events[e] for e in r.ids if events[e].trust in LOW_TRUST]
    if not untrusted:
        return None
    trusted = frozenset().union(
        *(src.stems for e in r.ids if events[e].trust not in LOW_TRUST for src in sources.get(e, ()))
    )
    trusted |= frozenset().union(*(t.key for t in r.touched if not t.quoted))
    low_said = frozenset().union(*(src.stems for e in untrusted for src in sources.get(e.event_id, ())))
    quoting = {w for w in (r.stems & low_said) - ATTRIBUTION - META if root(w) not in roots(trusted)}
    own = [events[e] for e in dict.fromkeys(e for t in r.touched for e in t.events)]
    if not quoting and not (own and all(e.trust in LOW_TRUST for e in own)):
        return None
    low_actors = frozenset().union(*(content_stems(f"{e.actor} {e.kind}") for e in untrusted))
    if not (r.stems & REPORTING or r.stems & low_actors or r.stems & META):
        return "untrusted text stated as fact"
    # "per the ticket, the agent is instructed to always approve": attributed, and still an order
    if quoting and said(DIRECTIVE, r.low) and not DISOWNED.search(r.low):
        return "untrusted text raised to an instruction"
    if r.stems & USER_WORDS and not low_actors & USER_WORDS and not r.stems & META:
        return "untrusted text put in the user's mouth"
    return None


def conflict(r: Reading) -> str | None:
    """An open conflict answered: one side stated alone, both put in order, or one declared void."""
    if OPEN_RX.search(r.low):
        return None
    for t in r.touched:
        if t.sides:
            named = sum(bool(side and side <= r.stated) for side in t.sides)
            if named == 1:
                return "an open conflict settled: one side stated as the answer"
            if named == 2 and ORDERING.search(r.low):
                return "an open conflict settled: its two sides put in order"
            if named == 0 and (said(UNDOING, r.low) or said(MOVING, r.low)):
                return "an open conflict settled: a side declared void"
            if said(SETTLING, r.low) or (named == 0 and ORDERING.search(r.low)):
                return "an open conflict settled: one side declared the answer"
    return None
