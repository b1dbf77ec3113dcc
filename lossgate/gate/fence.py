"""The critical-topic fence: a narrative sentence about what matters must say what a source said.

The prose fact diff compares atoms (numbers, dates, ids, negated statements) as sets, so
a model's narrative can contradict the memory in new words and keep every atom: "they can
eat peanuts now", "the earlier timezone no longer applies", a refund limit restated
without its "after supervisor review". The fence closes that for the topics that matter,
deterministically, with no model.

**Topics.** Each active fact whose loss is critical (:meth:`MustPreserve.loss_severity`),
each unresolved conflict, and each fact that is quoted or rests on untrusted or tool
text has a signature: the stems of its predicate's words, its value and its qualifier
values (the *key*), and the content stems of the events it was drawn from (the *context*).

**Sentences.** The summary less its structured lines (:func:`~lossgate.gate.prose.prose_of`)
and less the conversation lines that quote an event verbatim (``- actor: text``, under
their day headers), split into sentences, each with its atoms (amounts, dates, ids)
blanked: the prose fact diff compares those. A sentence *touches* a topic when it shares
a key stem with it, two context stems, or names a side of an open conflict.

**Support.** A touching sentence must restate what its topics' sources (and the source
sentences it shares two words with) said:

* no word that none of them uses, beyond attribution ("the user said"), permission said
  another way ("allowed" for "may"), names of the subject ("the account") and of where a
  quote came from ("a ticket"); "disputed", "pending" and the like only about an open
  conflict or an obligation;
* no source's negated statement restated without its negation, no negation the sources
  do not state, and a negative fact's own predicate word ("allowed" for
  ``food.peanuts_allowed = false``) never said without a negation;
* no condition dropped that the source sentence it restates sets ("only", "after",
  "before", "unless", "until", "if", "except", "up to", "at most", "at least", "no more
  than", "within", "provided"), unless the sentence only reports that something was
  said; no hedge ("might", "could", "maybe", "perhaps", "possibly", "probably") added or
  dropped;
* words only untrusted or tool text supplies are reported as what that source said (a
  reporting verb, "according to", or the source's actor), never put in the user's mouth;
* an open conflict is never answered: one side stated alone, or both put in order
  ("was X before; it is Y"), unless the sentence calls it disputed or open.

An unsupported sentence fails the artifact with ``narrative_unsupported`` (critical),
naming the topic, why, and quoting the sentence. A narrative that touches no topic is
never judged here.

What the fence does not see (a model judge, :mod:`lossgate.judge`, is the second line):
a contradiction that shares no word with a topic (a synonym for every key word, a
pronoun: "that is no longer true"), the same words with their roles swapped, "may" as a
hedge (it is read as permission), a restriction invented on another channel, quoted
text raised to the agent's own instruction, and anything about non-critical facts. It
is strict the other way too: a faithful paraphrase in new words is refused (55% of 42
free paraphrases in review; see the README), and escalation then falls back to the
deterministic narrative.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from lossgate.consolidate.compressor import CONVERSATION_TITLE
from lossgate.gate.atoms import extract_atoms
from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.outcome import Violation
from lossgate.gate.preserve import MustPreserve
from lossgate.gate.prose import prose_of
from lossgate.gate.sources import render_value
from lossgate.lines import day_line, event_line
from lossgate.records import ArtifactBody, Event, Fact, Snapshot
from lossgate.registry import Registry

__all__ = ["check_fence", "clear_sentence_cache", "narrative_sentences", "numbers_in", "Topic", "topics"]

NARRATIVE_TITLES = frozenset({CONVERSATION_TITLE, "Narrative:"})
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CONDITIONS = {
    name: re.compile(pattern) for name, pattern in {
        "only": r"\bonly\b", "after": r"\bafter\b", "before": r"\bbefore\b", "unless": r"\bunless\b",
        "until": r"\buntil\b|\btill\b", "if": r"\bif\b", "except": r"\bexcept\b|\bexcluding\b",
        "up to": r"\bup to\b", "at most": r"\bat most\b", "at least": r"\bat least\b",
        "no more than": r"\bno more than\b", "within": r"\bwithin\b", "provided": r"\bprovided\b",
    }.items()
}
# "may" is not here: it grants permission as often as it hedges ("you may refund up to $50").
# A condition clause: from its marker to the next punctuation (what a narrative may drop).
_CLAUSE = re.compile(r"\b(?:only|after|before|unless|until|till|if|except|excluding|up to|at most|at least|"
                     r"no more than|within|provided)\b[^,;.!?]*")
_HEDGES = re.compile(r"\b(?:might|could|maybe|perhaps|possibly|probably|likely|unsure|uncertain)\b")
_NEGATION_CUE = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot)\b|n[’']t\b")
_ATTRIBUTION = content_stems(
    "user users customer customers client clients agent assistant member requester subject person "
    "said says say saying told tell tells asked asks ask mentioned mentions mention wrote writes write "
    "stated states state according quoted quotes quote claimed claims claim reported reports report "
    "forwarded forwards noted notes replied replies explained explains gave give gives two both "
    # permission said another way ("you may refund" -> "refunds are allowed"); a negation is
    # still compared, so "not allowed" never passes for "may"
    "allowed allow allows permitted permit permits able")
_REPORTING = content_stems("said says say saying told tells wrote writes stated states according quoted quotes "
                           "claimed claims reported reports forwarded forwards mentioned mentions asked asks ask")
_USER_WORDS = content_stems("user users customer customers client clients")
# How a summary names an open question: allowed only about an open conflict or an open
# item (elsewhere "the peanut allergy is disputed" would invent a doubt).
_OPEN = content_stems("open pending outstanding disputed dispute disputes conflict conflicting conflicts unresolved "
                      "undecided unclear either")
# How a summary names where text came from, when it reports untrusted or tool text.
_META = content_stems("quote quoted untrusted source sources retrieved support ticket tickets email emails mail "
                      "mails page pages document documents message messages web website tool tools file "
                      "attachment chat")
# Words that order two values in time: naming both sides of a conflict this way settles it.
_ORDERING = re.compile(r"\b(?:before|after|earlier|later|now|previously|formerly|changed|no longer|used to|"
                       r"instead|replaced|superseded|current|currently|latest|newer|older)\b")
# Nouns a summary names the subject by, besides "the user": free to use, still topic words.
_SUBJECT_NOUNS = content_stems("account team company organisation organization household family")
_LOW_TRUST = frozenset({"untrusted", "tool"})
_WORDY = frozenset({"negation", "party"})  # atom kinds that are words, kept in a sentence


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


@dataclass(frozen=True)
class _Source:
    stems: frozenset[str]
    core: frozenset[str]  # the stems outside its condition clauses: what it is about
    negations: frozenset[str]  # keys of the negated statements (``not|head|word...``)
    conditions: frozenset[str]
    hedged: bool


def topics(snapshot: Snapshot, must: MustPreserve, registry: Registry) -> list[Topic]:
    """The topic signatures of the snapshot (see the module docstring)."""
    events = {e.event_id: e for e in snapshot.events}
    active = {f.fact_id: f for f in snapshot.facts if f.status == "active"}

    def key_of(*facts_: Fact) -> frozenset[str]:
        words: list[str] = []
        for f in facts_:
            words.append(f.predicate.replace(".", " ").replace("_", " "))
            words += [str(v) for _, v in f.qualifiers]
            if isinstance(f.value, (str, bool)):
                words.append(str(f.value))
        return content_stems(" ".join(words)) - _ATTRIBUTION - _META

    def sources_of(*facts_: Fact) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e for f in facts_ for e in f.source_event_ids if e in events))

    def context_of(ids: tuple[str, ...]) -> frozenset[str]:
        return content_stems(" ".join(events[e].text or "" for e in ids)) - _ATTRIBUTION - _META

    out: list[Topic] = []
    for f in active.values():
        quoted = f.modality == "quoted" or f.authority in _LOW_TRUST
        if must.loss_severity(f.fact_id) == "critical" or quoted:
            what = f"{'quoted text' if quoted else 'critical fact'} {f.predicate}"
            ids = sources_of(f)
            negative = f.polarity == "negative" or (f.value_type == "bool" and f.value is False)
            spec = registry.predicates.get(f.predicate)
            obligation = spec is not None and spec.category == "obligation"
            last = f.predicate.replace(".", "_").split("_")[-1]
            out.append(Topic(f.fact_id, what, key_of(f), context_of(ids), ids, quoted=quoted, value=_value_words(f),
                             negated=content_stems(last) if negative else frozenset(), open=obligation))
    for c in snapshot.conflicts:
        sides = [active[i] for i in c.fact_ids if i in active]
        if c.status == "unresolved" and len(sides) == 2:
            ids = sources_of(*sides)
            values = tuple(_value_words(f) for f in sides)
            out.append(Topic(c.conflict_id, f"open conflict on {sides[0].predicate}", key_of(*sides) - values[0]
                             - values[1] | (values[0] & values[1]), context_of(ids), ids, values, open=True))
    return out


def _value_words(f: Fact) -> frozenset[str]:
    """A conflict side's value as the words and numbers a sentence would state it with."""
    text = render_value(f.value_type, f.value)[0] if f.value is not None and f.value_type != "bool" else ""
    if f.value_type == "money":  # "$50", "50 USD", "USD 50.00": the amount is what a sentence states
        return numbers_in(text)
    return content_stems(text) | numbers_in(text)


def _sentences(text: str) -> list[tuple[str, str]]:
    """``text``'s sentences, each as written and with its atoms' spans (amounts, dates,
    times, identifiers) blanked: the prose fact diff compares those exactly, and their words
    ("USD", "April", the "May" of a date) say nothing about meaning here."""
    out = []
    for raw in _SENTENCE.split(text):
        raw = raw.strip(" -*\t") if raw else ""
        if not raw:
            continue
        plain = raw
        for a in extract_atoms(raw):
            if a.kind not in _WORDY and a.text:
                plain = plain.replace(a.text, " ")
        out.append((raw, plain))
    return out


def _negations(text: str) -> frozenset[str]:
    return frozenset(a.key for a in extract_atoms(text) if a.kind == "negation" and a.key.startswith("not|"))


def _conditions(text: str) -> frozenset[str]:
    low = text.lower()
    return frozenset(name for name, rx in _CONDITIONS.items() if rx.search(low))


def _source_sentences(events: tuple[Event, ...]) -> dict[str, tuple[_Source, ...]]:
    return {e.event_id: _read_source(e.text or "") for e in events}


@lru_cache(maxsize=16_384)
def _read_source(text: str) -> tuple[_Source, ...]:
    # A subject's events are read again at every consolidation with a narrative: each text
    # is read once (clear_sentence_cache drops deleted text, as the gate's atom cache does).
    return tuple(_Source(stems=content_stems(x), core=content_stems(_CLAUSE.sub(" ", x.lower())),
                         negations=_negations(x), conditions=_conditions(x), hedged=bool(_HEDGES.search(x.lower())))
                 for _, x in _sentences(text))


def clear_sentence_cache() -> None:
    """Forget every source text read (after a deletion: no deleted text lingers in memory)."""
    _read_source.cache_clear()


def narrative_sentences(snapshot: Snapshot, artifact: ArtifactBody) -> list[tuple[str, str]]:
    """The summary's own sentences, as written and with atoms blanked: not its structured
    lines, not its verbatim quotes of events (what the fence and a model judge read)."""
    quoted = {event_line(e) for e in snapshot.events} | {day_line(e) for e in snapshot.events} | NARRATIVE_TITLES
    lines = [ln for ln in prose_of(artifact).split("\n") if ln.strip() and ln not in quoted]
    return [pair for ln in lines for pair in _sentences(ln)]


def _problem(raw: str, sentence: str, stems: frozenset[str], touched: list[Topic],
             sources: dict[str, tuple[_Source, ...]], events: dict[str, Event]) -> str | None:
    """Why ``sentence`` (``raw`` with its atoms blanked) is not a restatement of what the
    touched topics' sources said, or None."""
    ids = tuple(dict.fromkeys(e for t in touched for e in t.events))
    # What the sentence may draw on: its topics' own sources, and every source sentence it
    # shares two content words with (a sentence often joins a topic to what surrounds it).
    near = [e for e, srcs in sources.items() if any(len(src.stems & stems) >= 2 for src in srcs)]
    ids = tuple(dict.fromkeys(ids + tuple(near)))
    said = [src for e in ids for src in sources.get(e, ())]
    opened = any(t.open for t in touched)
    pool = (frozenset().union(*(src.stems for src in said), *(t.key for t in touched)) | _ATTRIBUTION | _META
            | _SUBJECT_NOUNS | (_OPEN if opened else frozenset()))
    actors = frozenset().union(*(content_stems(f"{events[e].actor} {events[e].kind}") for e in ids))
    roots = {_root(w) for w in pool | actors}
    new = {w for w in stems - pool - actors if len(w) > 1 and _root(w) not in roots}
    if new:
        return f"words no source uses here: {', '.join(sorted(new)[:5])}"
    low = sentence.lower()
    negated = _negations(sentence)
    heads = {n.split("|")[1] for src in said for n in src.negations}
    if any(n.split("|")[1] not in heads for n in negated):
        return "a negation no source states"
    cue = bool(_NEGATION_CUE.search(low))
    for t in touched:
        if t.negated and t.negated & stems and not cue:
            return f"the fact is negative, the sentence states it without a negation ({t.what})"
    for src in said:
        for n in src.negations:
            words = set(n.split("|")[1:])
            # a statement ("never serve peanuts"), not a bare noun ("no peanuts"): a sentence
            # that only mentions peanuts asserts nothing about them
            if len(words) >= 2 and words <= stems and not cue:
                return "a source's negation dropped"
    restated = [src for src in said if len(src.stems & stems) >= 2]
    # A condition binds when the sentence restates what the sentence setting it is about
    # (its words outside the condition clauses): most of it, and best of all the sources.
    # Only a sentence that states a touched fact's value restates the fact ("may refund up to
    # $50"); one that mentions its topic ("they asked about a refund") sets no condition aside.
    # A sentence restates a fact when it states its value, or when it is no report of what
    # was said ("they asked about a refund" mentions a topic, sets no condition aside).
    stated = content_stems(raw) | numbers_in(raw)
    states_value = any(t.value and t.value <= stated for t in touched) or not stems & _REPORTING
    best = max((len(src.core & stems) for src in said), default=0)
    for src in (src for src in said if states_value and src.conditions and best
                and len(src.core & stems) == best and 2 * best >= len(src.core)):
        dropped = src.conditions - _conditions(sentence)
        if dropped:
            return f"a condition dropped: {', '.join(sorted(dropped))}"
    if bool(_HEDGES.search(low)) != any(src.hedged for src in restated):
        return "a hedge added or dropped"
    # Words only untrusted or tool text supplies restate that text: it must be reported as
    # what its source said, never stated as fact or put in the user's mouth.
    trusted = frozenset().union(*(src.stems for e in ids if events[e].trust not in _LOW_TRUST
                                  for src in sources.get(e, ())))
    own = [events[e] for e in dict.fromkeys(e for t in touched for e in t.events)]
    trusted |= frozenset().union(*(t.key for t in touched if not t.quoted))
    trusted_roots = {_root(x) for x in trusted}
    quoting = {w for w in stems - _ATTRIBUTION - _META if _root(w) not in trusted_roots}
    if quoting or (own and all(e.trust in _LOW_TRUST for e in own)):
        untrusted = [events[e] for e in ids if events[e].trust in _LOW_TRUST]
        low_actors = frozenset().union(*(content_stems(f"{e.actor} {e.kind}") for e in untrusted))
        if untrusted and not (stems & _REPORTING or stems & low_actors):
            return "untrusted text stated as fact"
        if untrusted and stems & _USER_WORDS and not low_actors & _USER_WORDS:
            return "untrusted text put in the user's mouth"
    for t in touched:
        if t.sides:
            named = sum(bool(side and side <= content_stems(raw) | numbers_in(raw)) for side in t.sides)
            if named == 1 and not stems & _OPEN:
                return "an open conflict settled: one side stated as the answer"
            if named == 2 and _ORDERING.search(low) and not stems & _OPEN:
                return "an open conflict settled: its two sides put in order"
    return None


_SUFFIXES = ("ing", "ed", "es", "er", "ly", "s", "e")


def _root(stem: str) -> str:
    """A coarser stem, so that inflections the stemmer keeps apart ("using", "use") meet."""
    for suffix in _SUFFIXES:
        if stem.endswith(suffix) and len(stem) - len(suffix) >= 2:
            return stem[: -len(suffix)]
    return stem


def numbers_in(text: str) -> frozenset[str]:
    """The numbers in ``text``, written one way: "14,250.00" and "14250" are both "14250"."""
    out = set()
    for n in re.findall(r"[0-9][0-9:.,/-]*[0-9]|[0-9]", text):
        n = n.replace(",", "")
        if re.fullmatch(r"[0-9]+\.[0-9]+", n):
            n = n.rstrip("0").rstrip(".")
        out.add(n)
    return frozenset(out)


def check_fence(snapshot: Snapshot, artifact: ArtifactBody, must: MustPreserve, registry: Registry) -> list[Violation]:
    """``narrative_unsupported`` for every narrative sentence that touches a topic and does not
    restate what that topic's sources said (one violation per sentence and topic)."""
    found = topics(snapshot, must, registry)
    if not found:
        return []
    sentences = narrative_sentences(snapshot, artifact)
    if not sentences:
        return []
    sources = _source_sentences(snapshot.events)
    events = {e.event_id: e for e in snapshot.events}
    out: list[Violation] = []
    for raw, sentence in sentences:
        stems = content_stems(sentence)
        touched = [t for t in found if stems & t.key or len(stems & t.context) >= 2
                   or any(side and side <= numbers_in(raw) for side in t.sides)]
        if not touched:
            continue
        problem = _problem(raw, sentence, stems, touched, sources, events)
        if problem is None:
            continue
        for t in touched:
            out.append(Violation(code="narrative_unsupported", subject=t.subject, severity="critical",
                                 detail=f"{problem} ({t.what}): {raw[:300]!r}"))
    return out
