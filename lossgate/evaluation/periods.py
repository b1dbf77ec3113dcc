"""LoCoMo by period: does the published memory cover every session, small, with its atoms reachable?

For each conversation (ingested by :func:`lossgate.evaluation.locomo.ingest`, which records
each turn's session), :func:`measure` consolidates the subject (by default with the default
compressor and :class:`~lossgate.consolidate.hierarchy.HierarchyConfig`'s ``auto`` mode,
which goes hierarchical at LoCoMo's sizes; whether it did is reported, never assumed) and
reads the published artifact, the hierarchy's root:

* **sessions**: a session is *covered* when the root's summary has, under ``Periods:``, a
  digest of that session's part (the part's key ``session N``, or ``session N #k`` for a
  session split by size) titled with the session's own date as the data gives it
  (``[YYYY-MM-DD]``, :func:`~lossgate.model.wording.period_line`). The digests are read from the
  summary's text; the root's children (in the order they are rolled up) say which session
  each one digests, and a title that is not its child's period is reported as misaligned.
* **tokens**: the raw conversation is its turns' lines (:attr:`~lossgate.evaluation.locomo.Turn.line`,
  one token more each for the newline: the LoCoMo recall eval's "full context"); the
  published memory is the root's whole summary; both counted with
  :func:`~lossgate.consolidate.tokens.default_counter`. Reduction is ``1 - published / raw``.
* **evidence atoms**: for every question (all five categories; evidence ids that name no turn
  are left out, as the recall eval does) and every evidence turn, the turn's
  loss-intolerant atoms of the kinds in :data:`KINDS` (the gate's deterministic
  :func:`~lossgate.gate.atoms.extract_atoms`, relative dates resolved against the turn's own
  time), one per distinct ``(kind, key)`` in the turn. Each occurrence is classified, first
  that holds:

  a. ``digest``: its key is among the atoms of its session's digest (the lines under that
     session's period title in the root summary, extracted with the same reference time);
  b. ``question``: a recall with the question as the query, at the LoCoMo recall eval's
     budget, hands back the evidence turn (as an event, or as a line of the returned
     summary: path ``event``), or the atom's key is among the atoms of what it returned
     (each returned event read against its own time, each returned digest line against its
     period's date: path ``text``);
  c. ``atom``: a recall whose query is the atom's own text in the turn (``yesterday``,
     ``$10``, ``K-200A``) hands back the evidence turn (invariant 14: what is kept is
     findable);
  d. ``unreachable``: none of these.

  Occurrences are counted per question (a turn that is evidence for two questions counts
  twice, each with its own question's recall); *distinct* atoms are counted once per
  ``(conversation, turn, kind, key)``, with the best class any of its questions reached.

Key matching is what the gate does: a digest that keeps the same date said of another turn
of that session counts as keeping it (path ``digest``), and so does, for path ``text``, the
same key anywhere in what a recall returned. Recall's ranking does not look at atoms.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lossgate.api.memory import Memory
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.consolidate.tokens import TokenCounter, default_counter
from lossgate.errors import NotFound
from lossgate.evaluation.locomo import TENANT, Conversation, Turn, ingest
from lossgate.gate.atoms import extract_atoms
from lossgate.model.derived_records import Artifact, RecallResult
from lossgate.model.wording import PERIODS_TITLE, fact_line, period_line

__all__ = [
    "KINDS",
    "CLASSES",
    "CATEGORY_NAMES",
    "measure",
    "period_blocks",
    "session_digests",
    "covered_sessions",
    "question_total",
    "ConversationFigures",
    "Occurrence",
    "PeriodsReport",
    "SessionCoverage",
]

#: The atom kinds counted: dates and times, amounts, identifiers (not negations, not parties).
KINDS: tuple[str, ...] = ("date", "datetime", "time", "money", "percent", "quantity", "identifier", "email", "phone")
#: How an evidence atom is reachable, best first.
CLASSES: tuple[str, ...] = ("digest", "question", "atom", "unreachable")
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_TITLE = re.compile(r"\[(\d{4}-\d{2}-\d{2})(?: to (\d{4}-\d{2}-\d{2}))?\]")
_SESSION_KEY = re.compile(r"session (.+?)(?: #\d+)?")
_EXAMPLES = 25

AtomKey = tuple[str, str]


def period_blocks(summary: str) -> list[tuple[str, list[str]]]:
    """The digests of a hierarchical root's summary: ``(period title, its lines)``, in order."""
    lines = summary.split("\n")
    if PERIODS_TITLE not in lines:
        return []
    blocks: list[tuple[str, list[str]]] = []
    for line in lines[lines.index(PERIODS_TITLE) + 1 :]:
        if _TITLE.fullmatch(line):
            blocks.append((line, []))
        elif line.strip() and blocks:
            blocks[-1][1].append(line)
    return blocks


@dataclass(frozen=True)
class SessionCoverage:
    """Which session each digest of a root's summary belongs to."""

    digests: dict[str, list[tuple[str, list[str]]]]  # session -> its blocks (title, lines), in order
    misaligned: tuple[str, ...] = ()  # what could not be matched between the summary and the parts


def session_digests(summary: str, parts: Iterable[tuple[str, datetime, datetime]]) -> SessionCoverage:
    """Match the summary's digests to the root's parts (``(key, first_at, last_at)`` in the
    order they were rolled up): a digest belongs to the session its part's key names, if its
    title is its part's period."""
    blocks = period_blocks(summary)
    parts = list(parts)
    digests: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
    misaligned: list[str] = []
    if len(blocks) != len(parts):
        misaligned.append(f"{len(blocks)} period digests in the summary, {len(parts)} parts in the manifest")
    for (title, lines), (key, first, last) in zip(blocks, parts, strict=False):
        if title != period_line(first, last):
            misaligned.append(f"part {key!r} ({period_line(first, last)}) is titled {title}")
            continue
        m = _SESSION_KEY.fullmatch(key)
        if m is None:
            misaligned.append(f"part {key!r} names no session")
            continue
        digests[m.group(1)].append((title, lines))
    return SessionCoverage(digests=dict(digests), misaligned=tuple(misaligned))


def covered_sessions(turns: Iterable[Turn], coverage: SessionCoverage) -> tuple[dict[str, str], list[str]]:
    """Each session's title as the data dates it (``[YYYY-MM-DD]``, its first turn's day),
    and the sessions that have a digest under that title (every part of a session split by
    size titled so)."""
    sessions: dict[str, str] = {}
    for t in turns:
        sessions.setdefault(str(t.session), period_line(t.at, t.at))
    covered = [
        s
        for s, title in sessions.items()
        if coverage.digests.get(s) and all(b[0] == title for b in coverage.digests[s])
    ]
    return sessions, covered


@dataclass
class Tally:
    """Atom occurrences by class, and by path within a class: ``digest`` by ``line`` (the
    evidence turn's own line is in the digest) or ``key`` (another line of the digest has the
    same atom); ``question`` by ``event`` or ``text`` (see the module docstring)."""

    classes: Counter[str] = field(default_factory=Counter)
    paths: Counter[str] = field(default_factory=Counter)

    def add(self, cls: str, path: str | None = None) -> None:
        self.classes[cls] += 1
        if path:
            self.paths[f"{cls}_by_{path}"] += 1

    def merge(self, other: Tally) -> None:
        self.classes.update(other.classes)
        self.paths.update(other.paths)

    def to_json(self) -> dict[str, Any]:
        total = sum(self.classes.values())
        reachable = total - self.classes["unreachable"]
        paths = {p: self.paths[p] for p in ("digest_by_line", "digest_by_key", "question_by_event", "question_by_text")}
        return {
            "atoms": total,
            **{c: self.classes[c] for c in CLASSES},
            **paths,
            "in_digest_share": self.classes["digest"] / total if total else 1.0,
            "reachable_share": reachable / total if total else 1.0,
        }


@dataclass
class ConversationFigures:
    """One conversation's figures."""

    sample_id: str
    status: str  # the consolidation attempt's
    path: str | None  # the published artifact's manifest path ("hierarchical" for a root)
    parts: int
    sessions: dict[str, str]  # session -> its expected title ("[YYYY-MM-DD]")
    covered: list[str]
    misaligned: tuple[str, ...]
    raw_tokens: int
    published_tokens: int
    questions: int = 0
    atoms: Tally = field(default_factory=Tally)
    distinct: Tally = field(default_factory=Tally)
    recall_modes: Counter[str] = field(default_factory=Counter)  # "summary" when the root was fresh

    @property
    def hierarchical(self) -> bool:
        return self.path == "hierarchical"

    @property
    def reduction(self) -> float:
        return 1 - self.published_tokens / self.raw_tokens if self.raw_tokens else 0.0

    def to_json(self) -> dict[str, Any]:
        missing = [s for s in self.sessions if s not in self.covered]
        return {
            "sample_id": self.sample_id,
            "status": self.status,
            "path": self.path,
            "hierarchical": self.hierarchical,
            "parts": self.parts,
            "sessions": len(self.sessions),
            "sessions_covered": len(self.covered),
            "missing_sessions": {s: self.sessions[s] for s in missing},
            "misaligned": list(self.misaligned),
            "raw_tokens": self.raw_tokens,
            "published_tokens": self.published_tokens,
            "reduction": self.reduction,
            "questions": self.questions,
            "recall_modes": dict(self.recall_modes),
            "atoms": self.atoms.to_json(),
            "distinct_atoms": self.distinct.to_json(),
        }


@dataclass(frozen=True)
class Occurrence:
    """One evidence atom of one question, and where it was found."""

    sample_id: str
    question: int  # its index in the conversation's questions
    dia_id: str
    kind: str
    key: str
    text: str
    found: str  # one of CLASSES
    path: str | None  # within the class: digest by "line" or "key", question by "event" or "text"

    def to_json(self) -> dict[str, Any]:
        return {
            "sample_id": self.sample_id,
            "question": self.question,
            "dia_id": self.dia_id,
            "kind": self.kind,
            "key": self.key,
            "found": self.found,
            "path": self.path,
        }


@dataclass
class PeriodsReport:
    """Per conversation and overall (see the module docstring)."""

    sha256: str
    budget: int
    kinds: tuple[str, ...]
    conversations: list[ConversationFigures]
    by_kind: dict[str, Tally]
    by_category: dict[str, Tally]
    unreachable: list[dict[str, Any]]  # the first few, for a reader to look at
    occurrences: list[Occurrence] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        convs = self.conversations
        total, distinct = Tally(), Tally()
        for c in convs:
            total.merge(c.atoms)
            distinct.merge(c.distinct)
        raw = sum(c.raw_tokens for c in convs)
        published = sum(c.published_tokens for c in convs)
        sessions = sum(len(c.sessions) for c in convs)
        covered = sum(len(c.covered) for c in convs)
        overall = {
            "conversations": len(convs),
            "hierarchical": sum(c.hierarchical for c in convs),
            "sessions": sessions,
            "sessions_covered": covered,
            "raw_tokens": raw,
            "published_tokens": published,
            "reduction": 1 - published / raw if raw else 0.0,
            "questions": sum(c.questions for c in convs),
            "atoms": total.to_json(),
            "distinct_atoms": distinct.to_json(),
        }
        measures: dict[str, Callable[[ConversationFigures], float]] = {
            "reduction": lambda c: c.reduction,
            "sessions_covered_share": lambda c: len(c.covered) / (len(c.sessions) or 1),
            "in_digest_share": lambda c: c.atoms.to_json()["in_digest_share"],
            "reachable_share": lambda c: c.atoms.to_json()["reachable_share"],
        }
        worst = {}  # per figure, the conversation where it is lowest (the first of equals)
        for name, fn in measures.items():
            if convs:
                low = min(convs, key=fn)
                worst[name] = {"sample_id": low.sample_id, "value": fn(low)}
        requirements = {
            "all_hierarchical": overall["hierarchical"] == len(convs),
            "every_session_covered": covered == sessions,
            "reduction_at_least_80pct_each": all(c.reduction >= 0.80 for c in convs),
            "every_atom_reachable": total.classes["unreachable"] == 0,
        }
        return {
            "budget_tokens": self.budget,
            "data_sha256": self.sha256,
            "kinds": list(self.kinds),
            "overall": overall,
            "worst": worst,
            "requirements": requirements,
            "conversations": [c.to_json() for c in convs],
            "by_kind": {k: t.to_json() for k, t in self.by_kind.items()},
            "by_category": {k: t.to_json() for k, t in self.by_category.items()},
            "unreachable_examples": self.unreachable,
            "occurrences": [o.to_json() for o in self.occurrences],
        }


def question_total(conversations: list[Conversation]) -> int:
    """How many questions :func:`measure` reads (for a progress bar)."""
    total = 0
    for c in conversations:
        ids = {t.dia_id for t in c.turns}
        total += sum(1 for q in c.questions if any(e in ids for e in q.evidence))
    return total


def _keys(text: str, at: datetime | None, kinds: frozenset[str]) -> set[AtomKey]:
    return {(a.kind, a.key) for a in extract_atoms(text, reference_time=at, affirmations=False) if a.kind in kinds}


def _title_time(title: str) -> datetime:
    m = _TITLE.fullmatch(title)
    assert m is not None
    return datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC)


def _returned_keys(result: RecallResult, kinds: frozenset[str]) -> set[AtomKey]:
    """The atoms of what a recall returned: each event against its own time, each digest
    line against its period's date, the rest (the ledger's lines) with no reference time."""
    found: set[AtomKey] = set()
    for e in result.events:
        found |= _keys(e.text or "", e.occurred_at, kinds)
    for f in result.facts:
        found |= _keys(fact_line(f), None, kinds) if f.value is not None else set()
    at: datetime | None = None
    head: list[str] = []
    for line in (result.summary or "").split("\n"):
        if _TITLE.fullmatch(line):
            at = _title_time(line)
        elif at is None:
            head.append(line)
        elif line.strip():
            found |= _keys(line, at, kinds)
    found |= _keys("\n".join(head), None, kinds)
    return found


def _hands_back(result: RecallResult, event_id: str, turn: Turn) -> bool:
    """The recall returned the turn: as an event, or as a line of its summary."""
    return any(e.event_id == event_id for e in result.events) or turn.line in (result.summary or "").split("\n")


def _root(memory: Memory, sample_id: str) -> Artifact | None:
    try:
        alias = memory.admin.alias(TENANT, sample_id)
        return memory.admin.artifact(TENANT, sample_id, alias.artifact_id) if alias.artifact_id else None
    except NotFound:
        return None


def measure(
    memory: Memory,
    conversations: list[Conversation],
    *,
    budget: int = 2000,
    config: ConsolidationConfig | None = None,
    kinds: Iterable[str] = KINDS,
    sha256: str = "",
    counter: TokenCounter | None = None,
    progress: Callable[[int], None] | None = None,
) -> PeriodsReport:
    """Ingest and consolidate each conversation, then measure its published memory (see the
    module docstring). ``budget`` is every recall's, as in the LoCoMo recall eval."""
    count = counter or default_counter()
    wanted = frozenset(kinds)
    figures: list[ConversationFigures] = []
    by_kind: dict[str, Tally] = defaultdict(Tally)
    by_category: dict[str, Tally] = defaultdict(Tally)
    unreachable: list[dict[str, Any]] = []
    occurrences: list[Occurrence] = []
    for conv in conversations:
        ingest(memory, conv)
        attempt = memory.consolidate(TENANT, conv.sample_id, config=config)
        if memory.embedder is not None:
            memory.admin.embed(TENANT, conv.sample_id)
        root = _root(memory, conv.sample_id)
        summary = root.body.summary if root is not None else ""
        children = [memory.admin.artifact(TENANT, conv.sample_id, i) for i in root.manifest.children] if root else []
        parts = [
            (c.manifest.part.key, c.manifest.part.first_at, c.manifest.part.last_at)
            for c in children
            if c.manifest.part is not None
        ]
        coverage = session_digests(summary, parts)
        sessions, covered = covered_sessions(conv.turns, coverage)
        fig = ConversationFigures(
            sample_id=conv.sample_id,
            status=attempt.status,
            path=root.manifest.path if root else None,
            parts=len(parts),
            sessions=sessions,
            covered=covered,
            misaligned=coverage.misaligned,
            raw_tokens=sum(count(t.line) + 1 for t in conv.turns),
            published_tokens=count(summary) if summary else 0,
        )
        figures.append(fig)

        digest_text = {
            s: "\n".join(line for _, lines in blocks for line in lines) for s, blocks in coverage.digests.items()
        }
        digest_lines = {s: {line for _, lines in blocks for line in lines} for s, blocks in coverage.digests.items()}
        digest_cache: dict[tuple[str, datetime], set[AtomKey]] = {}
        atom_cache: dict[str, RecallResult] = {}
        best: dict[tuple[str, AtomKey], int] = {}
        by_id = {t.dia_id: t for t in conv.turns}
        for number, q in enumerate(conv.questions):
            evidence = [by_id[e] for e in dict.fromkeys(q.evidence) if e in by_id]
            if not evidence:
                continue
            fig.questions += 1
            asked: RecallResult | None = None
            asked_keys: set[AtomKey] | None = None
            for turn in evidence:
                session, event_id = str(turn.session), f"{conv.sample_id}:{turn.dia_id}"
                seen: set[AtomKey] = set()
                for atom in extract_atoms(turn.text, reference_time=turn.at, affirmations=False):
                    key = (atom.kind, atom.key)
                    if atom.kind not in wanted or key in seen:
                        continue
                    seen.add(key)
                    path = None
                    if (session, turn.at) not in digest_cache:
                        digest_cache[session, turn.at] = _keys(digest_text.get(session, ""), turn.at, wanted)
                    if key in digest_cache[session, turn.at]:
                        cls, path = "digest", "line" if turn.line in digest_lines.get(session, ()) else "key"
                    else:
                        if asked is None:
                            asked = memory.recall(TENANT, conv.sample_id, query=q.text, budget=budget)
                            asked_keys = _returned_keys(asked, wanted)
                            fig.recall_modes[asked.mode] += 1
                        assert asked_keys is not None
                        if _hands_back(asked, event_id, turn):
                            cls, path = "question", "event"
                        elif key in asked_keys:
                            cls, path = "question", "text"
                        else:
                            if atom.text not in atom_cache:
                                atom_cache[atom.text] = memory.recall(
                                    TENANT, conv.sample_id, query=atom.text, budget=budget
                                )
                                fig.recall_modes[atom_cache[atom.text].mode] += 1
                            found = _hands_back(atom_cache[atom.text], event_id, turn)
                            cls = "atom" if found else "unreachable"
                    for tally in (
                        fig.atoms,
                        by_kind[atom.kind],
                        by_category[CATEGORY_NAMES.get(q.category, str(q.category))],
                    ):
                        tally.add(cls, path)
                    occurrences.append(
                        Occurrence(conv.sample_id, number, turn.dia_id, atom.kind, atom.key, atom.text, cls, path)
                    )
                    rank = CLASSES.index(cls)
                    best[turn.dia_id, key] = min(rank, best.get((turn.dia_id, key), rank))
                    if cls == "unreachable" and len(unreachable) < _EXAMPLES:
                        unreachable.append(
                            {
                                "sample_id": conv.sample_id,
                                "dia_id": turn.dia_id,
                                "session": session,
                                "category": q.category,
                                "question": q.text,
                                "kind": atom.kind,
                                "text": atom.text,
                                "key": atom.key,
                            }
                        )
            if progress:
                progress(1)
        for rank in best.values():
            fig.distinct.add(CLASSES[rank])  # (its paths are counted per occurrence only)
    return PeriodsReport(
        sha256=sha256,
        budget=budget,
        kinds=tuple(k for k in KINDS if k in wanted) or tuple(sorted(wanted)),
        conversations=figures,
        by_kind=dict(by_kind),
        by_category=dict(by_category),
        unreachable=unreachable,
        occurrences=occurrences,
    )
