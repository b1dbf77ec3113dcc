"""What a model's narrative may say: whatever concerns what matters is the ledger's to say.

A lexical judge cannot prove that free prose agrees with a fact: "dislikes peanuts" for an
allergy, "ringing is fine" when calling is forbidden, a colleague's allergy told as the
subject's, a dish made with peanut sauce. So lossgate does not publish such prose. Before
the gate, every sentence a compressor wrote itself (not a quote of an event, a day or period
title, a fact or conflict line: :func:`~lossgate.gate.fence.narrative_sentences`) that
*touches a topic* is taken out of the summary (:func:`speak_for_ledger`); the ledger's own
lines, which the gate proves field by field, say it instead, and recall prints them first.

A sentence touches a topic when it names, by a word or its stem:

* a critical fact, an open conflict, or quoted, tool or untrusted content of the subject (the
  critical-topic fence's topics, :mod:`lossgate.gate.fence.topics`: the predicate's words,
  the value, the qualifiers, two words of its sources, a side of a conflict), or a synonym
  the registry lists for the fact's predicate (``synonyms = ["satay", "groundnut"]``);
* the topic of a predicate whose facts are preferences, instructions, permissions or
  obligations, or critical, whether or not the subject has one (an invented preference is
  stated in the ledger's words or not at all): its words and synonyms;
* a named party other than the subject, with the words of any predicate of the registry
  (another person's fact is no fact of this subject).

A sentence that only tells *that* something was discussed ("they talked about the refund
policy": no number, no negation, a word of mention) stays. What is left is the narrative
the gate still reads as ever (numbers, dates, amounts, identifiers, negations against the
sources; the fence; a model judge when configured).

A tenant chooses what happens to a touching sentence (:data:`NarrativePolicy`): ``omit``
(the default) publishes the narrative without it and keeps the sentence and why on the
attempt; ``refuse`` fails the attempt with ``narrative_touches_topic`` (critical), so the
retry and its escalation run as for any refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from lossgate.gate.atoms import extract_atoms
from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.fence import Touching, narrative_sentences, topics
from lossgate.gate.fence.lexicon import ANAPHOR, ATTRIBUTION, MENTION, META, NEGATION_CUE
from lossgate.gate.outcome import Violation
from lossgate.gate.preserve import MustPreserve
from lossgate.records import ArtifactBody, Snapshot
from lossgate.registry import Registry
from lossgate.render import NARRATIVE_TITLE

__all__ = ["NarrativePolicy", "NARRATIVE_POLICIES", "Omitted", "speak_for_ledger", "touching_violations"]

NarrativePolicy = Literal["omit", "refuse"]
NARRATIVE_POLICIES: tuple[NarrativePolicy, ...] = ("omit", "refuse")
_LEDGER_CATEGORIES = ("preference", "instruction", "permission", "obligation")
_DIGIT = re.compile(r"[0-9]")


@dataclass(frozen=True)
class Omitted:
    """A narrative sentence left out of a summary: the sentence, and the topic it touched."""

    sentence: str
    topic: str

    def line(self) -> str:
        """How the attempt keeps it (``Attempt.details``)."""
        return f"narrative_omitted: touches {self.topic}: {self.sentence[:300]!r}"


class _Reader:
    """Which topic a sentence touches (see the module docstring), for one snapshot."""

    def __init__(self, snapshot: Snapshot, must: MustPreserve, registry: Registry) -> None:
        found = topics(snapshot, must, registry)
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
        self.domains: dict[str, str] = {}  # stem -> "the topic of <predicate>"
        self.any_predicate: set[str] = set()
        for name, spec in registry.predicates.items():
            singles = [w for w in spec.synonyms if " " not in w.strip()]
            words = _stems((name.replace(".", " ").replace("_", " "), *singles)) - META - ATTRIBUTION
            self.any_predicate |= words
            if spec.category in _LEDGER_CATEGORIES or spec.criticality == "critical":
                for w in words:
                    self.domains.setdefault(w, f"the topic of {name}")
                self.phrases += [(_phrase(w), f"the topic of {name}") for w in spec.synonyms if " " in w.strip()]
        self.own_names = {snapshot.subject_id.casefold(), *(e.actor.casefold() for e in snapshot.events if e.actor)}
        # the subject's own values that read as names (a street of its address: "Pine Avenue")
        self.own_values = " ".join(str(f.value) for f in snapshot.facts
                                   if f.status == "active" and isinstance(f.value, str)).casefold()

    def topic_of(self, raw: str, sentence: str) -> str | None:
        stems = content_stems(sentence)
        if self.touching is not None:
            hit = self.touching(raw, stems)
            if hit:
                return hit[0].what
        for w in sorted(stems):
            if w in self.synonyms:
                return self.synonyms[w]
        for pattern, topic in self.phrases:
            if pattern.search(raw):
                return topic
        for w in sorted(stems):
            if w in self.domains:
                return self.domains[w]
        if stems & self.any_predicate:
            for a in extract_atoms(raw):
                if a.kind == "party" and a.key.casefold() not in self.own_names \
                        and a.key.casefold() not in self.own_values:
                    return f"another party's fact ({a.key})"
        return None


def _phrase(words: str) -> re.Pattern[str]:
    """``words`` as a phrase in a sentence: whole words, any case and spacing."""
    return re.compile(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words.split()) + r"(?!\w)", re.IGNORECASE)


def _stems(phrases: tuple[str, ...] | list[str]) -> frozenset[str]:
    return frozenset().union(*(content_stems(p) for p in phrases)) if phrases else frozenset()


def _mentions_only(raw: str) -> bool:
    """"They talked about the refund policy": tells that something was said, states nothing."""
    return bool(MENTION.search(raw)) and not NEGATION_CUE.search(raw) and not _DIGIT.search(raw)


def speak_for_ledger(snapshot: Snapshot, body: ArtifactBody, must: MustPreserve, registry: Registry, *,
                     quoted: frozenset[str] = frozenset()) -> tuple[ArtifactBody, tuple[Omitted, ...]]:
    """``body`` without the narrative sentences that touch a topic (see the module docstring),
    and what was left out. A line that loses every sentence goes; a narrative section left
    empty goes with its title. ``quoted``: lines known to quote events the snapshot does not
    hold (a parent's conversation), never narrative. ``body`` carries no superseded-value
    markers yet (:mod:`lossgate.gate.superseded` marks what is published, after this)."""
    pairs = narrative_sentences(snapshot, body, quoted)
    if not pairs:
        return body, ()
    reader = _Reader(snapshot, must, registry)
    omitted: list[Omitted] = []
    out: set[str] = set()
    previous: str | None = None  # the topic the sentence before touched
    asked = False
    for raw, sentence in pairs:
        topic = None if _mentions_only(raw) else reader.topic_of(raw, sentence)
        if topic is None and previous is not None and (ANAPHOR.match(sentence) or asked):
            # "That no longer holds." speaks of the sentence before it, as does the answer to a
            # question or a heading ("Peanuts? Totally fine.")
            topic = previous
        previous, asked = topic, raw.rstrip().endswith(("?", ":"))
        if topic is not None and raw not in out:
            omitted.append(Omitted(raw, topic))
            out.add(raw)
    if not omitted:
        return body, ()
    return body.model_copy(update={"summary": _without(body.summary, out)}), tuple(omitted)


def _without(summary: str, sentences: set[str]) -> str:
    """``summary`` with ``sentences`` cut out of the lines that hold them."""
    lines = []
    for line in summary.split("\n"):
        kept = line
        for s in sentences:
            if s in kept:
                kept = kept.replace(s, "")
        if kept != line:
            kept = " ".join(kept.split()).strip(" -*")
            if not kept or not any(ch.isalnum() for ch in kept):
                continue
            if line.lstrip().startswith("- "):
                kept = "- " + kept
        lines.append(kept)
    if lines and lines[-1] == NARRATIVE_TITLE:
        lines.pop()
    return "\n".join(lines)


def touching_violations(omitted: tuple[Omitted, ...]) -> list[Violation]:
    """Under the ``refuse`` policy: ``narrative_touches_topic`` for each touching sentence."""
    return [Violation(code="narrative_touches_topic", subject="narrative", severity="critical",
                      detail=f"a sentence on {o.topic}, which only the ledger states: {o.sentence[:300]!r}")
            for o in omitted]
