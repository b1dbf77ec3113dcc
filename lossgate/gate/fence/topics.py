"""What a narrative may only restate: the topic signatures of a snapshot (critical facts,
open conflicts, quoted or untrusted text)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.fence.lexicon import ATTRIBUTION, LOW_TRUST, MARKER_WORDS, META
from lossgate.gate.fence.text import atom_keys, conditions, numbers_in, read_source
from lossgate.gate.preserve import MustPreserve
from lossgate.gate.sources import value_forms
from lossgate.model.records import Fact, Snapshot
from lossgate.model.registry import Registry
from lossgate.runtime.caches import holds_text


@dataclass(frozen=True)
class Topic:
    """What a narrative may only restate: a critical fact, an open conflict or a quoted instruction."""

    subject: str  # the violation's subject: a fact id or a conflict id
    what: str  # "critical fact food.peanuts_allowed", "open conflict on timezone", ...
    key: frozenset[str]
    context: frozenset[str]
    events: tuple[str, ...]  # the event ids it was drawn from
    sides: tuple[frozenset[str], ...] = ()  # an open conflict: each side's value, as stems and numbers
    quoted: bool = False  # quoted, untrusted or tool text: its own words are not the memory's
    open: bool = False  # an open conflict, or an obligation not yet met: "pending", "disputed" fit it
    value: frozenset[str] = frozenset()  # a fact's value, as the words and numbers that state it
    negated: frozenset[str] = frozenset()  # a negative fact: its predicate's last word ("allowed"), never said bare
    speculative: bool = False  # its value is only what someone may do or be: never stated as settled
    earlier: frozenset[str] = frozenset()  # the values its predicate had before (superseded facts)
    changed: bool = False  # the ledger superseded or revoked an earlier value of its predicate
    object: frozenset[str] = frozenset()  # a negative fact: what it forbids ("peanut", "phone"), not its namespace
    names: frozenset[str] = frozenset()  # its key less its namespace: a sentence naming these states it
    predicate: str = ""  # a fact's predicate
    allows: bool = False  # a flag that is true ("contact.allowed = true"): said as forbidden, it flips
    forbidden: frozenset[str] = frozenset()  # the words its sources negate ("serve", "call")
    subject_words: frozenset[str] = frozenset()  # what every one of its (two or more) sources speaks of ("kickoff")
    conditional: tuple[frozenset[str], ...] = ()  # qualifiers that set a condition ("staging only"), as stems
    obligation: bool = False  # something to do, not yet done


def topics(snapshot: Snapshot, must: MustPreserve, registry: Registry, *, every: bool = False) -> list[Topic]:
    """The topic signatures of the snapshot (see the module docstring); with ``every``, of
    every active fact that matters, critical or important (what the ledger alone states in
    published prose); contextual facts (continuity) are no topic."""
    events = {e.event_id: e for e in snapshot.events if e.state == "valid"}
    active = {f.fact_id: f for f in snapshot.facts if f.status == "active"}
    # What a predicate's value was before: a sentence may tell of the change ("moved from ...").
    earlier: dict[str, frozenset[str]] = {}
    retired = {f.predicate for f in snapshot.facts if f.status in ("superseded", "revoked")}
    for f in snapshot.facts:
        if f.status == "superseded":
            earlier[f.predicate] = earlier.get(f.predicate, frozenset()) | value_words(f)

    def key_of(*facts_: Fact) -> frozenset[str]:
        # the predicate's words, less the generic ones ("quoted.request"); its qualifier
        # values and a text value whole ("channel": "email" names the email channel)
        named: list[str] = []
        for f in facts_:
            named += [str(v) for _, v in f.qualifiers]
            if isinstance(f.value, str):
                named.append(f.value)
        predicates = " ".join(f.predicate.replace(".", " ").replace("_", " ") for f in facts_)
        return (content_stems(predicates) - META | content_stems(" ".join(named))) - ATTRIBUTION

    def sources_of(*facts_: Fact) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e for f in facts_ for e in f.source_event_ids if e in events))

    event_words: dict[str, frozenset[str]] = {}

    def words_of(e: str) -> frozenset[str]:
        if e not in event_words:
            event_words[e] = content_stems(events[e].text or "") - ATTRIBUTION - META
        return event_words[e]

    def context_of(ids: tuple[str, ...]) -> frozenset[str]:
        return frozenset().union(*(words_of(e) for e in ids))

    # What every source event of a predicate's facts (two or more) speaks of: once per predicate.
    said_of: dict[str, dict[str, None]] = {}
    for g in snapshot.facts:
        said_of.setdefault(g.predicate, {}).update(dict.fromkeys(e for e in g.source_event_ids if e in events))
    common_of: dict[str, frozenset[str]] = {}

    def common(predicate: str) -> frozenset[str]:
        if predicate not in common_of:
            ids = list(said_of.get(predicate, ()))
            words = [words_of(e) for e in ids]
            common_of[predicate] = frozenset.intersection(*words) if len(words) >= 2 else frozenset()
        return common_of[predicate]

    out: list[Topic] = []
    for f in active.values():
        quoted = f.modality == "quoted" or f.authority in LOW_TRUST
        severity = must.loss_severity(f.fact_id)
        critical = severity == "critical"
        if critical or quoted or every and severity == "important":
            what = f"{'quoted text' if quoted else 'critical fact' if critical else 'fact'} {f.predicate}"
            ids = sources_of(f)
            negative = f.polarity == "negative" or (f.value_type == "bool" and f.value is False)
            spec = registry.predicates.get(f.predicate)
            obligation = spec is not None and spec.category == "obligation"
            last = f.predicate.replace(".", "_").split("_")[-1]
            forbidden = (
                frozenset(
                    w
                    for e in ids
                    for src in read_source(events[e].text or "")
                    for n in src.negations
                    for w in n.split("|")[1:]
                )
                - ATTRIBUTION
            )
            conditional = tuple(
                content_stems(str(v)) - MARKER_WORDS
                for _, v in f.qualifiers
                if conditions(str(v)) and content_stems(str(v)) - MARKER_WORDS
            )
            key = key_of(f)
            names = key - content_stems(f.predicate.rpartition(".")[0].replace("_", " "))
            out.append(
                Topic(
                    f.fact_id,
                    what,
                    key,
                    context_of(ids),
                    ids,
                    quoted=quoted,
                    value=value_words(f),
                    names=names,
                    subject_words=common(f.predicate),
                    predicate=f.predicate,
                    allows=f.value_type == "bool" and f.value is True and f.polarity == "positive",
                    negated=content_stems(last) if negative else frozenset(),
                    open=obligation,
                    obligation=obligation,
                    forbidden=forbidden,
                    conditional=conditional,
                    speculative=f.modality == "speculative",
                    earlier=earlier.get(f.predicate, frozenset()),
                    changed=f.predicate in retired,
                    object=names - content_stems(last) if negative else frozenset(),
                )
            )
    for c in snapshot.conflicts:
        sides = [active[i] for i in c.fact_ids if i in active]
        if c.status == "unresolved" and len(sides) == 2:
            ids = sources_of(*sides)
            values = tuple(value_words(f) for f in sides)
            out.append(
                Topic(
                    c.conflict_id,
                    f"open conflict on {sides[0].predicate}",
                    key_of(*sides) - values[0] - values[1] | (values[0] & values[1]),
                    context_of(ids),
                    ids,
                    values,
                    open=True,
                )
            )
    return out


def value_words(f: Fact) -> frozenset[str]:
    """A fact's value as a sentence states it: its atoms' keys where it has atoms (an amount,
    a date: written any way), else its words and numbers."""
    text = value_forms(f.value_type, f.value)[0] if f.value is not None and f.value_type != "bool" else ""
    return _words_of_value(text)


@lru_cache(maxsize=16_384)
def _words_of_value(text: str) -> frozenset[str]:
    # a fact's value comes back at every consolidation; a deleted one is forgotten with the gate's text
    return atom_keys(text) or content_stems(text) | numbers_in(text)


holds_text(_words_of_value.cache_clear)
