"""The critical-topic fence: a narrative sentence about what matters may not change its meaning.

The prose fact diff compares atoms (numbers, dates, ids, negated statements) as sets, so
a model's narrative can contradict the memory in new words and keep every atom: "they can
eat peanuts now", "the earlier timezone no longer applies", a refund limit restated
without its "after supervisor review". The fence closes the most common of these for the
topics that matter, deterministically, with no model.

**Topics.** Each active fact whose loss is critical (:meth:`MustPreserve.loss_severity`),
each unresolved conflict, and each fact that is quoted or rests on untrusted or tool
text has a signature: the stems of its predicate's words, its value and its qualifier
values (the *key*), and the content stems of the events it was drawn from (the *context*).

**Sentences.** The summary less its structured lines (:func:`~lossgate.gate.prose.prose_of`)
and less the conversation lines that quote an event verbatim (``- actor: text``, under
their day headers), split into sentences. A sentence *touches* a topic when it shares a
key stem with it, two context stems, or names a side of an open conflict; a sentence that
touches none and opens with a pronoun ("That no longer holds.") speaks of the topics of
the sentence before it.

**Meaning, not wording.** A touching sentence may say what its sources said in any words.
What it may not change is the meaning-bearing part, each compared with the source
sentences of its topics (and those it shares two words with) and with the ledger:

* *polarity*: a word the sources affirm negated ("not permitted" for "you may refund"), a
  negative fact's value negated or stated as allowed or wanted ("calling the user is
  fine", "they can eat peanuts"), an avoidance negated ("not allergic"), a source's
  negation dropped, a prohibition narrowed by a scope no source names ("on weekends"), a
  source's condition reversed ("without supervisor review"), an obligation denied;
* *conditions*: a condition dropped that the source sentence it restates sets ("only",
  "after", "unless", "up to", ...; kept by a word of its kind, "capped at" for "up to",
  or by what its clause names), a fact's conditional qualifier dropped ("staging only"),
  a restriction no source sets added ("only for domestic orders", "except weekends");
* *modality*: a hedge no source has ("may be", "probably", "about 20 kg"), a speculative
  fact stated as settled, a settled fact called open or disputed;
* *time*: a change no source states ("no longer", "reversed"; "moved", "updated" are
  fine where a source or the ledger's history tells of a change), a change the ledger
  records denied ("hasn't changed"), an open obligation called done;
* *provenance*: words only untrusted or tool text supplies stated as fact, put in the
  user's mouth, or raised to an instruction ("the agent must ...") even when attributed;
* *conflicts*: an open conflict answered: one side stated alone, both put in order, one
  declared void or "the real one", unless the sentence leaves it open.

A sentence that only tells that something was said ("they discussed the refund policy",
"a rule about when they may be emailed") states no value and sets no condition aside.

An unsupported sentence fails the artifact with ``narrative_unsupported`` (critical),
naming the topic, why, and quoting the sentence. A narrative that touches no topic is
never judged here.

**Precision first.** The fence refuses on evidence that the meaning changed, never on
unfamiliar words, so that a model's faithful paraphrase publishes: on the shipped
hand-written corpora (``lossgate eval narratives``) it refuses 1 of 1,044 faithful
sentences and catches 35-48% of the wrong ones on its own; on a corpus it had not
been fitted to, 2-5% (see docs/evaluation.md). What it passes is for a model
judge (:mod:`lossgate.judge`): antonyms and synonyms ("dislikes", "approved" for "not
authorized"), a wrong subject, a severity softened ("more of a preference"), and any
contradiction that touches no topic's words.
"""

from __future__ import annotations

from collections import Counter

from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.fence.checks import (
    change,
    condition,
    conflict,
    elevated,
    hedge,
    polarity,
    read,
    source_index,
    stance,
)
from lossgate.gate.fence.lexicon import ANAPHOR
from lossgate.gate.fence.text import clear_sentence_cache, numbers_in, sentences, source_sentences, stated
from lossgate.gate.fence.topics import Topic, topics
from lossgate.gate.outcome import Violation
from lossgate.gate.preserve import MustPreserve
from lossgate.gate.prose import prose_of
from lossgate.model.records import ArtifactBody, Snapshot
from lossgate.model.registry import Registry
from lossgate.model.wording import CONVERSATION_TITLE, NARRATIVE_TITLE, PERIOD_LINE, PERIODS_TITLE, day_line, event_line

__all__ = [
    "check_fence",
    "clear_sentence_cache",
    "narrative_lines",
    "narrative_sentences",
    "narrative_text",
    "numbers_in",
    "Topic",
    "Touching",
    "topics",
]

NARRATIVE_TITLES = frozenset({CONVERSATION_TITLE, NARRATIVE_TITLE, PERIODS_TITLE})


def narrative_sentences(
    snapshot: Snapshot, artifact: ArtifactBody, quoted: frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """The summary's own sentences, as written and with atoms blanked: not its structured
    lines, not its verbatim quotes of events (what the fence and a model judge read), nor the
    lines in ``quoted`` (quotes of events a bounded snapshot does not hold: a parent's)."""
    return [pair for line in narrative_lines(snapshot, artifact, quoted) for pair in line]


def narrative_lines(
    snapshot: Snapshot, artifact: ArtifactBody, quoted: frozenset[str] = frozenset()
) -> list[list[tuple[str, str]]]:
    """:func:`narrative_sentences`, line by line (a sentence speaks of the one before it on its line)."""
    return [sentences(ln) for ln in narrative_text(snapshot, artifact, quoted)]


def narrative_text(snapshot: Snapshot, artifact: ArtifactBody, quoted: frozenset[str] = frozenset()) -> list[str]:
    """The lines of the summary (without markers) that its compressor wrote itself: not its
    structured lines, its quotes of events, its titles (see :func:`narrative_sentences`)."""
    quoted = (
        quoted | {event_line(e) for e in snapshot.events} | {day_line(e) for e in snapshot.events} | NARRATIVE_TITLES
    )
    return [
        ln for ln in prose_of(artifact).split("\n") if ln.strip() and ln not in quoted and not PERIOD_LINE.fullmatch(ln)
    ]


class Touching:
    """Which topics a sentence touches (see the module docstring), found through an index of
    their words: a gate run meets hundreds of topics and sentences."""

    def __init__(self, found: list[Topic]) -> None:
        self.found = found
        self.names: dict[str, set[int]] = {}
        self.context: dict[str, set[int]] = {}
        for i, t in enumerate(found):
            for w in t.key | t.forbidden | t.subject_words:
                self.names.setdefault(w, set()).add(i)
            for w in t.context:
                self.context.setdefault(w, set()).add(i)
        self.sided = [i for i, t in enumerate(found) if t.sides]

    def __call__(self, raw: str, stems: frozenset[str]) -> list[Topic]:
        hits = {i for w in stems for i in self.names.get(w, ())}
        shared = Counter(i for w in stems for i in self.context.get(w, ()))
        hits.update(i for i, n in shared.items() if n >= 2)
        if self.sided:
            written = stated(raw)
            hits.update(i for i in self.sided if any(side and side <= written for side in self.found[i].sides))
        return [self.found[i] for i in sorted(hits)]


def check_fence(snapshot: Snapshot, artifact: ArtifactBody, must: MustPreserve, registry: Registry) -> list[Violation]:
    """``narrative_unsupported`` for every narrative sentence that touches a topic and says
    something other than its sources (one violation per sentence and topic)."""
    found = topics(snapshot, must, registry)
    if not found:
        return []
    lines = narrative_sentences(snapshot, artifact)
    if not lines:
        return []
    # only valid events are what was said (a gate case may carry retired ones to forbid them)
    valid = tuple(e for e in snapshot.events if e.state == "valid")
    sources = source_sentences(valid)
    index = source_index(sources)
    touches = Touching(found)
    events = {e.event_id: e for e in valid}
    out: list[Violation] = []
    previous: list[Topic] = []
    previous_stems: frozenset[str] = frozenset()
    asked = False
    for raw, sentence in lines:
        stems = content_stems(sentence)
        touched, before = touches(raw, stems), frozenset[str]()
        if not touched and (ANAPHOR.match(sentence) or asked):
            # "That is no longer true." speaks of the sentence before; so does the answer to
            # a question or a heading ("Peanuts? Totally fine.")
            touched, before = previous, previous_stems
        previous, previous_stems, asked = touched, stems, raw.rstrip().endswith(("?", ":"))
        if not touched:
            continue
        r = read(raw, sentence, touched, sources, index, before)
        problem = (
            polarity(r)
            or stance(r)
            or change(r)
            or condition(r)
            or hedge(r)
            or elevated(r, sources, events)
            or conflict(r)
        )
        if problem is None:
            continue
        for t in touched:
            out.append(
                Violation(
                    code="narrative_unsupported",
                    subject=t.subject,
                    severity="critical",
                    detail=f"{problem} ({t.what}): {raw[:300]!r}",
                )
            )
    return out
