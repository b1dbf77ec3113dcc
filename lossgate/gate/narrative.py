"""What a model's narrative may say: whatever concerns what matters is the ledger's to say.

A lexical judge cannot prove that free prose agrees with a fact: "dislikes peanuts" for an
allergy, "ringing is fine" when calling is forbidden, a colleague's allergy told as the
subject's, a dish made with peanut sauce. So lossgate does not publish such prose. Before
the gate, every sentence a compressor wrote itself (not a quote of an event, a day or period
title, a fact or conflict line: :func:`~lossgate.gate.fence.narrative_sentences`) that
*touches a topic* is taken out of the summary (:func:`speak_for_ledger`); the ledger's own
lines, which the gate proves field by field, say it instead, and recall prints them first.
Where the sentence was, a :func:`~lossgate.model.wording.ledger_line` names the predicates it
was about (``[see the ledger: food.peanuts_allowed]``): it states no value, so the narrative
keeps its order and says nothing the gate would have to prove.

A sentence touches a topic when it names, by a word or its stem:

* a fact that matters (critical or important; not a contextual one, kept for continuity), an
  open conflict, or quoted, tool or untrusted content of the subject (the fence's topics,
  :mod:`lossgate.gate.fence.topics`: the predicate's words, the value, the qualifiers, two
  words of its sources, a side of a conflict), the predicate's name as a phrase ("customer
  id"), a synonym the registry lists for the predicate (``synonyms = ["satay", "groundnut"]``),
  or one of the value's or qualifiers' amounts, dates, identifiers and numbers, written any way
  ("SHP-1 weighs approx. 20 kg");
* the topic of a predicate the ledger holds a fact of, current or not (a deleted home city,
  a superseded plan), or whose facts are preferences, instructions, permissions or
  obligations, or matter (critical or important), whether or not the subject has one (an
  invented preference or home city is stated in the ledger's words or not at all): its
  words and synonyms;
* a named party other than the subject, with the words of any predicate of the registry
  (another person's fact is no fact of this subject);
* nothing of its own, but it refers back ("That no longer holds.", "The second one replaces
  the first.") to a sentence before it (on its line or the line before) that touched one, or
  answers a question or heading.

What the gate cannot read, it does not publish: a sentence with a character outside Latin
letters, digits and common punctuation (an invisible one, a look-alike from another script, a
fullwidth or styled letter, an emoji) or with markup that hides text from a reader is left
out (:mod:`lossgate.gate.readable`), and so is a sentence referring back to it. A line in a
form only lossgate writes (a speaker's line that quotes no event the snapshot holds, a fact,
conflict or ledger line the summary does not claim, a title of the recall block, a section, a
day or a period) is left out whole: a model cannot forge one.

A touching sentence stays only when it *restates* the one fact it touches in the ledger's own
terms (:meth:`_Reader.restates`): every word is the fact's (predicate, synonyms, value,
qualifiers) or says who it is about; its amounts, dates and identifiers are the fact's; it
negates exactly where the fact is negative and hedges exactly where it is speculative; it
keeps every qualifier with its condition words and adds no condition or bound; a speaker it
names is one of the sources' actors; it names every party its sources name; and it widens no
scope ("every", "all") its sources did not. That is a closed grammar, not a judge: a word outside it ("dislikes", "ringing",
"colleague") takes the sentence out whatever it means. Conflicts, quoted text and a fact whose
predicate changed are never restated in prose.

A sentence that only tells *that* something was discussed ("they talked about the refund
policy": no number, no negation, a word of mention) stays. What is left is the narrative
the gate still reads as ever (numbers, dates, amounts, identifiers, negations against the
sources; the fence; a model judge when configured).

A tenant chooses what happens to a touching sentence (:data:`NarrativePolicy`): ``omit``
(the default) publishes the narrative without it and keeps the sentence and why on the
attempt; ``refuse`` fails the attempt with ``narrative_touches_topic`` (critical), so the
retry and its escalation run as for any refusal. Under ``omit`` the same holds for a
sentence the gate then refuses for what it says (a number, identifier or negation the
sources do not support, a statement the fence reads as unsupported): it is left out and the
body gated again (:func:`without_unproven`); only what pruning prose cannot mend (a lost
fact, a changed claim) refuses the summary.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from lossgate.gate.atoms import extract_atoms
from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.fence import Touching, narrative_text, topics
from lossgate.gate.fence.lexicon import (
    ATTRIBUTION,
    BOUND,
    HEDGES,
    MARKER_WORDS,
    MARKERS,
    MAY_HEDGE,
    MENTION,
    META,
    NEGATION_CUE,
    SUBJECT_NOUNS,
    USER_WORDS,
)
from lossgate.gate.fence.text import atom_keys, sentences, stated
from lossgate.gate.fence.topics import Topic
from lossgate.gate.outcome import Violation
from lossgate.gate.preserve import MustPreserve
from lossgate.gate.prose import structured_lines
from lossgate.gate.readable import breaks, plain, unreadable
from lossgate.gate.sources import label_of, value_forms
from lossgate.gate.superseded import Retired, mark, strip_markers
from lossgate.model.derived_records import EVENTS_TITLE, FACTS_TITLE
from lossgate.model.records import ArtifactBody, Snapshot
from lossgate.model.registry import Registry
from lossgate.model.wording import (
    NARRATIVE_TITLE,
    PERIOD_LINE,
    SECTION_TITLES,
    ledger_line,
    ledger_line_predicates,
    one_line,
)

__all__ = [
    "NarrativePolicy",
    "NARRATIVE_POLICIES",
    "Omitted",
    "speak_for_ledger",
    "touching_violations",
    "without_unproven",
]

NarrativePolicy = Literal["omit", "refuse"]
NARRATIVE_POLICIES: tuple[NarrativePolicy, ...] = ("omit", "refuse")
_LEDGER_CATEGORIES = ("preference", "instruction", "permission", "obligation")
_DIGIT = re.compile(r"[0-9]")
# Words a restating sentence may use besides the fact's own: who said it, whom it is about.
_FRAME = ATTRIBUTION | USER_WORDS | SUBJECT_NOUNS
# What refers back to the sentence before: a pronoun, "the other one", "the original date", "since".
_REFERS = re.compile(
    r"\b(?:that|this|it|its|they|them|their|these|those|which|such|he|she|him|her|same|one|ones|"
    r"other|first|second|former|latter|earlier|later|original|previous|since|then|there|"
    r"again|back|instead|either|neither)\b|n[’']t\b",
    re.IGNORECASE,
)
# ... across a line: what refers to a statement, not a person ("That changed.", not "They met.")
_PEOPLE = re.compile(r"\b(?:they|them|their|he|she|him|her)\b", re.IGNORECASE)
_MARKER = re.compile(rf"\b(?:{MARKERS})\b")
_COMPOUND = re.compile(r"\b([^\W\d_]+)-([^\W\d_]+)\b")
# The forms of lossgate's own lines (:mod:`lossgate.model.wording`), which no compressor writes
_LEDGER_FORM = ledger_line(()).rstrip("]").rstrip()
_FACT_FORM = re.compile(r"- (?:UNRESOLVED CONFLICT on |[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+: )")
# a speaker's line, bulleted or not, emphasised or not ("- user:", "* **User**:", "User:")
_QUOTE_FORM = re.compile(
    r"\s*(?:[-*•>+·–—]\s*)?(?:\*\*|__|\*|_)?(?P<actor>[^:*_\n]{1,64}?)(?:\*\*|__|\*|_)?"
    r"(?: \(untrusted, quoted\))?\s*:"
)
_UNREAD = "what a sentence the gate cannot read was about"
_ROLES = frozenset({"user", "assistant", "system", "agent", "tool", "developer"})
_BLOCK_TITLES = frozenset({FACTS_TITLE, EVENTS_TITLE})
_TITLE_WHY = "a title of lossgate's own"
_NEGATIONS = content_stems(
    "not no never none nothing neither nor without cannot don't doesn't didn't won't "
    "isn't aren't wasn't shouldn't mustn't can't"
)
_SPEAKERS = USER_WORDS | content_stems(
    "admin administrator agent assistant manager supervisor operator owner team support staff tool system"
)
# Words that widen or narrow what a statement covers; a restating sentence uses only those its
# fact's sources used ("every team's launch" for one team's).
_SCOPE = re.compile(r"\b(?:every|all|any|each|always|only|both|either|whole|entire|other|another|some|also|too)\b")


@dataclass(frozen=True)
class Omitted:
    """A narrative sentence left out of a summary: the sentence, and the topic it touched (or,
    ``unproven``, what the gate could not prove in it, or a line in a form only lossgate
    writes); ``spoken``: the predicates whose
    ledger lines speak in its place (:func:`~lossgate.model.wording.ledger_line`)."""

    sentence: str
    topic: str
    unproven: bool = False
    spoken: tuple[str, ...] = ()

    def line(self) -> str:
        """How the attempt keeps it (``Attempt.details``)."""
        why = self.topic if self.unproven else f"touches {self.topic}"
        return f"narrative_omitted: {why}: {self.sentence[:300]!r}"


# a topic touched, the one fact it alone touches, and every topic it touches
_Found = tuple[str, "Topic | None", tuple[str, ...]] | None


class _Reader:
    """Which topic a sentence touches (see the module docstring), for one snapshot."""

    def __init__(self, snapshot: Snapshot, must: MustPreserve, registry: Registry) -> None:
        found = topics(snapshot, must, registry, every=True)
        self.touching = Touching(found) if found else None
        # A one-word synonym is matched by its stem; one of several words as that phrase ("money
        # back" names a refund, "back" alone does not).
        self.synonyms: dict[str, str] = {}  # stem -> the topic it names
        self.phrases: list[tuple[re.Pattern[str], str]] = []
        for t in found:
            spec = registry.predicates.get(t.predicate)
            for word in spec.synonyms if spec else ():
                if " " in word.strip():
                    self.phrases.append((_phrase(word), t.what))
                else:
                    for stem in content_stems(word):
                        self.synonyms.setdefault(stem, t.what)
        # a predicate's own words: its name's and its one-word synonyms' stems
        self.words_of = {
            name: _stems(
                (name.replace(".", " ").replace("_", " "), *(w for w in spec.synonyms if " " not in w.strip()))
            )
            for name, spec in registry.predicates.items()
        }
        # what states a fact's value or names what it is about, written any way: its value's and
        # qualifiers' amounts, dates, identifiers and numbers ("SHP-1 weighs approx. 20 kg")
        self.marks: dict[str, Topic] = {}
        named: dict[str, str] = {}  # a predicate's name, as a phrase ("customer id") -> its topic
        by_id = {f.fact_id: f for f in snapshot.facts}
        for t in found:
            f = by_id.get(t.subject)
            if f is None:
                continue
            written = " ".join(str(v) for _, v in f.qualifiers)
            if f.value is not None and f.value_type != "bool":
                written += " " + value_forms(f.value_type, f.value)[0]
            for m in t.value | stated(written) - content_stems(written):
                self.marks.setdefault(m, t)
            for said in (
                f.predicate.rpartition(".")[2].replace("_", " "),
                f.predicate.replace(".", " ").replace("_", " "),
            ):
                named.setdefault(said, t.what)
        self.phrases += [(_phrase(said, plural=True), what) for said, what in named.items()]
        self.domains: dict[str, str] = {}  # stem -> "the topic of <predicate>"
        self.any_predicate: set[str] = set()
        spoken = {f.predicate for f in snapshot.facts}  # the ledger has a fact on it, current or not
        for name, spec in registry.predicates.items():
            singles = [w for w in spec.synonyms if " " not in w.strip()]
            words = _stems((name.replace(".", " ").replace("_", " "), *singles)) - META - ATTRIBUTION
            self.any_predicate |= words
            if spec.category in _LEDGER_CATEGORIES or spec.criticality != "contextual" or name in spoken:
                for w in words:
                    self.domains.setdefault(w, f"the topic of {name}")
                self.phrases += [(_phrase(w), f"the topic of {name}") for w in spec.synonyms if " " in w.strip()]
        self.facts = {f.fact_id: f for f in snapshot.facts if f.status == "active"}
        # the predicate each topic is about, whose ledger lines speak where a sentence on it was
        self.predicate_of = {f"the topic of {name}": name for name in registry.predicates}
        conflicted = {c.conflict_id: c.fact_ids[0] for c in snapshot.conflicts}
        for t in found:
            fact = self.facts.get(t.subject) or self.facts.get(conflicted.get(t.subject, ""))
            if fact is not None:
                self.predicate_of.setdefault(t.what, fact.predicate)
        self.texts = {e.event_id: e.text for e in snapshot.events if e.state == "valid"}
        self.actors = {e.event_id: (e.actor or "").casefold() for e in snapshot.events}
        self.own_names = {snapshot.subject_id.casefold(), *(e.actor.casefold() for e in snapshot.events if e.actor)}
        # the subject's own values that read as names (a street of its address: "Pine Avenue")
        self.own_values = " ".join(
            str(f.value) for f in snapshot.facts if f.status == "active" and isinstance(f.value, str)
        ).casefold()

    def topic_of(self, raw: str, sentence: str) -> _Found:
        """The topic ``raw`` touches, and the one fact topic it touches alone, if it does."""
        stems = _words(sentence)
        hits = self.touching(raw, stems) if self.touching is not None else []
        marked = [self.marks[m] for m in sorted(stated(raw) - stems) if m in self.marks]
        hits += marked
        named = {self.synonyms[w] for w in stems if w in self.synonyms}
        seen = plain(raw)
        named |= {what for pattern, what in self.phrases if pattern.search(raw) or pattern.search(seen)}
        if hits:
            alone = hits[0] if len({t.subject for t in hits}) == 1 and named <= {hits[0].what} else None
            # what it is about: the topics it names by their own words, values or sides, else
            # those it shares their sources' words with (one long message is many facts' source)
            own = [t for t in hits if t.sides or stems & (t.key | t.forbidden) or t in marked]
            about = [*(t.what for t in own or hits), *sorted(named)]
            return hits[0].what, alone, tuple(dict.fromkeys(about))
        for w in sorted(stems):
            if w in self.synonyms:
                return self.synonyms[w], None, tuple(sorted(named))
        for pattern, topic in self.phrases:
            if pattern.search(raw) or pattern.search(seen):
                return topic, None, tuple(sorted(named))
        domains = [self.domains[w] for w in sorted(stems) if w in self.domains]
        if domains:
            return domains[0], None, tuple(dict.fromkeys(domains))
        if stems & self.any_predicate:
            for a in extract_atoms(raw):
                if (
                    a.kind == "party"
                    and a.key.casefold() not in self.own_names
                    and a.key.casefold() not in self.own_values
                ):
                    return f"another party's fact ({a.key})", None, ()
        return None

    def spoken(self, topics: tuple[str, ...], claimed: frozenset[str]) -> tuple[str, ...]:
        """The predicates of ``topics`` that ``claimed`` holds: the ledger lines that say
        what a sentence on those topics was about (none for another party's fact, or a topic
        the ledger holds no fact of)."""
        named = (self.predicate_of.get(t) for t in topics)
        return tuple(dict.fromkeys(p for p in named if p is not None and p in claimed))

    def restates(self, raw: str, sentence: str, t: Topic) -> bool:
        """Whether ``raw`` says the fact of ``t`` in the ledger's own terms and nothing else
        (see the module docstring): the only sentences on a topic a narrative may keep."""
        if t.quoted or t.sides or t.changed:
            return False
        fact = self.facts.get(t.subject)
        if fact is None:
            return False
        sources = [self.texts.get(e) or "" for e in fact.source_event_ids]
        # whom its sources name ("Team Blue's Atlas launch"): a restatement names them too, or it
        # widens the fact to every party of that name ("The Atlas launch is due ...")
        parties = [content_stems(a.key) for text in sources for a in extract_atoms(text) if a.kind == "party"]
        own = t.key | t.value | t.names | self.words_of.get(t.predicate, frozenset()) | frozenset().union(*parties)
        if content_stems(sentence) - own - _FRAME - _NEGATIONS:
            return False
        if atom_keys(raw) - t.value - t.key or not t.value <= stated(raw):
            return False
        if len(NEGATION_CUE.findall(raw)) != (1 if t.negated else 0):  # one negation, where the fact is one
            return False
        if bool(HEDGES.search(raw) or MAY_HEDGE.search(raw)) != t.speculative:
            return False
        # every qualifier, with its "only", "after", "before"; and no condition or bound of its own
        qualifiers = [str(v) for _, v in fact.qualifiers]
        if _conditions(raw) != _conditions(" ".join(qualifiers)):
            return False
        written = stated(raw)
        if not all(stated(q) - MARKER_WORDS <= written for q in qualifiers):
            return False
        # who said it: a sentence naming a speaker names one of the fact's sources' actors
        actors = {self.actors.get(e, "") for e in fact.source_event_ids}
        speakers = _SPEAKERS & content_stems(raw)
        if speakers - (USER_WORDS if "user" in actors else frozenset()) - content_stems(" ".join(actors)):
            return False
        if any(p - content_stems(raw) for p in parties):
            return False
        said = {w for text in sources for w in _SCOPE.findall(text.lower())}
        return not set(_SCOPE.findall(raw.lower())) - said


def _words(sentence: str) -> frozenset[str]:
    """The content stems a sentence is read by: its words as written and without their
    accents (:func:`~lossgate.gate.readable.plain`), and each hyphenated compound joined (a
    compound names what its word names: "follow-ups")."""
    seen = plain(sentence)
    said = sentence if seen == sentence else f"{sentence} {seen}"
    return content_stems(said) | content_stems(" ".join(a + b for a, b in _COMPOUND.findall(said)))


def _forged(line: str, actors: frozenset[str], said: frozenset[str]) -> str | None:
    """Why ``line``, a line a compressor wrote, has a form only lossgate writes (a quote of an
    event, a fact, conflict or ledger line, a title of the recall block), or ``None``. A line
    lossgate wrote is structure or a quote, never narrative: one in the narrative is forged. A
    speaker's line whose text is an event's of the snapshot (``said``), word for word, quotes it."""
    broken = breaks(line)
    if broken is not None:
        return broken
    if line.startswith(_LEDGER_FORM) or _FACT_FORM.match(line):
        return "a line in the ledger's form that the summary does not claim"
    quote = _QUOTE_FORM.match(line)
    if quote and quote["actor"].casefold() in actors and line[quote.end() :].strip() not in said:
        return "a line in the form of a quote that quotes no event of the subject"
    if line.strip() in _BLOCK_TITLES or line.startswith("Memory of "):
        return _TITLE_WHY
    return None


def _without_titles(summary: str) -> tuple[str, list[str]]:
    """``summary`` without the lines of its narrative that read as a title (a section's, a
    day's or a period's, which only lossgate writes), and those lines."""
    kept: list[str] = []
    titles: list[str] = []
    section = None
    for line in summary.split("\n"):
        if section == NARRATIVE_TITLE and (line in SECTION_TITLES or PERIOD_LINE.fullmatch(line)):
            titles.append(line)
            continue
        if section is None and line in SECTION_TITLES:
            section = line  # the summary's own title: the first (see summary_parts)
        kept.append(line)
    return "\n".join(kept), titles


def _conditions(text: str) -> set[str]:
    """The condition and bound words of ``text`` ("only", "after", "more", "at most")."""
    low = text.lower()
    return set(_MARKER.findall(low)) | set(BOUND.findall(low))


def _phrase(words: str, *, plural: bool = False) -> re.Pattern[str]:
    """``words`` as a phrase in a sentence: whole words, any case and spacing (and, with
    ``plural``, its last word with an ``s``)."""
    tail = r"s?" if plural else ""
    return re.compile(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words.split()) + tail + r"(?!\w)", re.IGNORECASE)


def _stems(phrases: tuple[str, ...] | list[str]) -> frozenset[str]:
    return frozenset().union(*(content_stems(p) for p in phrases)) if phrases else frozenset()


def _mentions_only(raw: str) -> bool:
    """ "They talked about the refund policy": tells that something was said, states nothing."""
    return bool(MENTION.search(raw)) and not NEGATION_CUE.search(raw) and not _DIGIT.search(raw)


def speak_for_ledger(
    snapshot: Snapshot,
    body: ArtifactBody,
    must: MustPreserve,
    registry: Registry,
    *,
    quoted: frozenset[str] = frozenset(),
) -> tuple[ArtifactBody, tuple[Omitted, ...]]:
    """``body`` with the ledger speaking where its narrative touched a topic (see the module
    docstring), and what was left out. Each touching sentence goes; in its place, a
    :func:`~lossgate.model.wording.ledger_line` names the predicates it was about that the
    body claims (none for another party's fact or a topic the ledger holds no fact of), so
    the narrative still tells where the topic came up and the agent reads its value in the
    claim's line. A line that loses every sentence and names no predicate goes; a narrative
    section left empty goes with its title. ``quoted``: lines known to quote events the
    snapshot does not hold (a parent's conversation), never narrative. ``body`` carries no
    superseded-value markers yet (:mod:`lossgate.gate.superseded` marks what is published,
    after this)."""
    summary, titles = _without_titles(body.summary)
    omitted = [Omitted(ln, _TITLE_WHY, unproven=True) for ln in titles]
    body = body.model_copy(update={"summary": summary}) if titles else body
    text = narrative_text(snapshot, body, quoted)
    if not text:
        return body, tuple(omitted)
    actors = _ROLES | {snapshot.subject_id.casefold()} | {e.actor.casefold() for e in snapshot.events if e.actor}
    said = frozenset(one_line(e.text) for e in snapshot.events if e.state == "valid" and e.text)
    forged = {ln: why for ln in text if (why := _forged(ln, actors, said)) is not None}
    omitted += [Omitted(ln, why, unproven=True) for ln, why in forged.items()]
    text = [ln for ln in text if ln not in forged]
    lines = [sentences(ln) for ln in text]
    follows = _after_ledger_lines(body.summary, frozenset(text))
    reader = _Reader(snapshot, must, registry)
    claimed = frozenset(c.predicate for c in body.claims)
    out: dict[str, tuple[str, ...]] = {}
    for raw, topic, touched, unread in _read(reader, lines, [follows.get(ln, ()) for ln in text]):
        if topic is None or raw in out:
            continue
        if unread:  # what the gate cannot read, it does not publish
            out[raw] = ()
            omitted.append(Omitted(raw, topic, unproven=True))
            continue
        out[raw] = reader.spoken(touched, claimed)
        omitted.append(Omitted(raw, topic, spoken=out[raw]))
    if not omitted:
        return body, ()
    summary = _in_place(body.summary, out, frozenset(text), dropped=frozenset(forged))
    return body.model_copy(update={"summary": summary}), tuple(omitted)


def _after_ledger_lines(summary: str, narrative: frozenset[str]) -> dict[str, tuple[str, ...]]:
    """The ``narrative`` lines of ``summary`` that come right after a ledger line, and the
    predicates it names (what a sentence opening such a line would speak of)."""
    out: dict[str, tuple[str, ...]] = {}
    last = ""
    for line in summary.split("\n"):
        if not line.strip():
            continue
        names = ledger_line_predicates(last)
        if names and line in narrative:
            out.setdefault(line, names)
        last = line
    return out


def _read(
    reader: _Reader, lines: list[list[tuple[str, str]]], follows: list[tuple[str, ...]]
) -> Iterator[tuple[str, str | None, tuple[str, ...], bool]]:
    """Each narrative sentence; what it is left out for (``None`` when it stays): the topic it
    touches and does not restate, its own or the one of the sentence before it that it speaks
    of, or why the gate cannot read it; every topic it speaks of; and whether it is unread. A
    sentence speaks of the sentence before it, on its line or ending the line before (left
    out, the ledger line in its place is what it follows), or of the ledger line before its
    line (``follows``: the predicates it names, per line)."""
    previous: str | None = None
    before: tuple[str, ...] = ()
    asked = False
    for pairs, after in zip(lines, follows, strict=True):
        if after:  # a ledger line the compressor carried or wrote: what follows may speak of it
            before = tuple(f"the topic of {p}" for p in after)
            previous, asked = before[0], False
        same_line = False
        for raw, sentence in pairs:
            why = unreadable(raw)
            if why is not None:
                # a sentence referring back to it speaks of what the gate could not read
                previous, before, asked = _UNREAD, (), False
                yield raw, why, (), True
                continue
            found = reader.topic_of(raw, sentence)
            topic, touched = (found[0], found[2]) if found else (None, ())
            if _mentions_only(raw):
                # it stays, but a sentence referring back to it ("Two deadlines were mentioned.
                # The user confirmed the earlier one.") speaks of what it named
                previous, before, asked = topic, touched, False
                yield raw, None, (), False
                continue
            refers = _REFERS.search(sentence if same_line else _PEOPLE.sub("", sentence))
            same_line = True
            if topic is None and previous is not None and (refers or asked):
                # "That no longer holds.", "The second one replaces the first.": a sentence that
                # names no topic and refers back speaks of the sentence before it, as does the
                # answer to a question or a heading ("Peanuts? Totally fine.")
                topic, touched = previous, before
            elif found and found[1] is not None and reader.restates(raw, sentence, found[1]):
                previous, before, asked = topic, touched, False
                yield raw, None, (), False  # the fact in the ledger's own terms: it stays
                continue
            previous, before, asked = topic, touched, raw.rstrip().endswith(("?", ":"))
            yield raw, topic, touched, False


def _in_place(
    summary: str, out: dict[str, tuple[str, ...]], narrative: frozenset[str], *, dropped: frozenset[str] = frozenset()
) -> str:
    """``summary`` without the lines ``dropped`` and the sentences ``out``, each replaced by the
    ledger line naming its predicates (nothing when it names none; one line for a run whose
    predicates the line before names already). Only
    the ``narrative`` lines are touched (a quote of an event holding the same sentence stays
    whole); each is read as the narrative is read (:func:`~lossgate.gate.fence.text.sentences`),
    so a sentence goes whole and only where it was written, never as a piece of a longer one
    ("$50 after supervisor review." out of "The agent may refund up to $50 after supervisor
    review.")."""
    lines: list[str] = []

    def add(line: str) -> None:
        names = ledger_line_predicates(line)
        if not (names and lines and set(names) <= set(ledger_line_predicates(lines[-1]))):
            lines.append(line)

    for line in summary.split("\n"):
        if line in dropped:
            continue
        said = [raw for raw, _ in sentences(line)] if line in narrative else []
        if not any(raw in out for raw in said):
            add(line)
            continue
        bullet = "- " if line.lstrip().startswith("- ") else ""
        kept: list[str] = []
        for raw in [*said, None]:
            if raw is not None and raw not in out:
                kept.append(raw)
                continue
            if kept and any(ch.isalnum() for ch in " ".join(kept)):
                add(bullet + " ".join(kept))
            kept = []
            if raw is not None and out[raw]:
                add(ledger_line(out[raw]))
    if lines and lines[-1] == NARRATIVE_TITLE:
        lines.pop()
    return "\n".join(lines)


# What a narrative sentence says that the gate may refuse it for; a loss (``atom_missing``)
# or a structured violation is the body's, and no pruning of prose mends it.
_SENTENCE_CODES = frozenset({"atom_added", "atom_changed", "narrative_unsupported"})


def without_unproven(
    snapshot: Snapshot,
    body: ArtifactBody,
    violations: tuple[Violation, ...] | list[Violation],
    *,
    retired: tuple[Retired, ...],
    quoted: frozenset[str] = frozenset(),
) -> tuple[ArtifactBody, tuple[Omitted, ...]] | None:
    """``body`` (as published: marked) without the narrative sentences that ``violations``
    (the gate's, for ``body``) refuse for what they say, marked again from ``retired``, and
    those sentences; ``None`` when no violation is one's. A sentence is found by the atoms
    it holds (an added or changed atom's label) or, for the fence, as the sentence it
    names. The caller gates the result again: what is left is published only when the gate
    passes it."""
    found = [v for v in violations if v.code in _SENTENCE_CODES]
    if not found:
        return None
    labels = {v.observed for v in found if v.observed}
    named = [v.detail for v in found if v.code == "narrative_unsupported"]
    out: dict[str, str] = {}
    text = narrative_text(snapshot, body, quoted)
    for line in text:
        for raw, _ in sentences(line):
            if raw in out:
                continue
            held = labels & {label_of(a) for a in extract_atoms(raw)}
            if held:
                out[raw] = f"what the gate cannot prove ({', '.join(sorted(held))})"
            elif any(repr(raw[:300]) in d for d in named):
                out[raw] = "what the gate cannot prove (the fence reads it as unsupported)"
    if not out:
        return None
    summary = mark(
        _in_place(strip_markers(body.summary), dict.fromkeys(out, ()), frozenset(text)), retired, structured_lines(body)
    )
    return (
        body.model_copy(update={"summary": summary}),
        tuple(Omitted(raw, why, unproven=True) for raw, why in out.items()),
    )


def touching_violations(omitted: tuple[Omitted, ...]) -> list[Violation]:
    """Under the ``refuse`` policy: ``narrative_touches_topic`` for each touching sentence."""
    return [
        Violation(
            code="narrative_touches_topic",
            subject="narrative",
            severity="critical",
            detail=f"a sentence on {o.topic}, which only the ledger states: {o.sentence[:300]!r}",
        )
        for o in omitted
    ]
