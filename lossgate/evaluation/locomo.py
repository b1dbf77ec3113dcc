"""The LoCoMo benchmark: does recall hand back what a question needs?

LoCoMo (Maharana et al., ACL 2024; public at ``snap-research/locomo``, file
``data/locomo10.json``, CC BY-NC 4.0) holds 10 long multi-session conversations
with 1,986 questions, each naming the turns (``evidence``) that answer it. The
data is never shipped with lossgate: :func:`load` takes its path and reports
whether its sha256 is the published file's.

The run (:func:`evaluate`):

1. every turn becomes an event of its conversation's subject (tenant
   ``locomo``), its time the session's date, its id ``<sample>:<dia_id>``,
   an image's caption appended as ``[shares a photo: ...]``;
2. each subject is consolidated with the default compressor (and, with an
   embedder, every turn is embedded: :meth:`~lossgate.Admin.embed`);
3. every question of categories 1-4 (multi-hop, temporal, open-domain,
   single-hop) is recalled with the question as the query at a fixed token
   budget, lexically, and with an embedder also hybrid (``lossgate +
   semantic``); with a reranker, also lexically with the reranking stage
   (``lossgate + rerank``) and, with an embedder too, hybrid with it (``lossgate +
   semantic + rerank``). *Evidence recall* is the share of the question's evidence turns
   that the recall hands back: as a returned event, or as a conversation line
   of the returned summary. Evidence ids that name no turn (a few are
   malformed in the data) are left out; a question left with none is skipped.

In the same run, on the same questions and budget, four baselines: the full
conversation (evidence recall 1 by definition, at its full size); plain BM25
over the turns' text (``rank_bm25``'s Okapi BM25 on lower-cased words), filling
the budget in rank order; the same BM25 over speaker and text (lossgate's index
holds both, so this is the like-for-like baseline); and the most recent turns,
filling the budget.

Loss-aware recall (:data:`~lossgate.recall.read.DROPPED_LEAD`) is measured in the same run:
``lossgate`` ranks with it, ``lossgate, loss-blind`` without it, on the same database and
questions. Besides the categories, each side reports ``dropped``: the questions with an
evidence turn that the published summary lists as dropped (an atom of it is in neither the
summary nor its claims, ``Manifest.dropped``). With ``development`` (the first conversations,
those a setting was chosen on), each figure is also split into ``development ...`` and
``held-out ...``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lossgate.api.memory import Memory
from lossgate.consolidate.tokens import TokenCounter, default_counter
from lossgate.errors import InvalidInput
from lossgate.evaluation.baselines import bm25_ranker, fill, percentile_ms, read_list
from lossgate.model.derived_records import RecallResult
from lossgate.model.records import NewEvent
from lossgate.model.wording import one_line
from lossgate.recall.read import dropped_events, recall

__all__ = [
    "PUBLISHED_SHA256",
    "CATEGORIES",
    "Turn",
    "Question",
    "Conversation",
    "load",
    "ingest",
    "evaluate",
    "question_count",
    "Report",
    "Side",
]

PUBLISHED_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
TENANT = "locomo"


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    at: datetime
    session: int = 0

    @property
    def line(self) -> str:
        """The turn as a conversation line, the way the deterministic compressor writes it."""
        return f"- {one_line(self.speaker)}: {one_line(self.text)}"


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def parse_session_date(raw: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> an aware datetime (UTC; the data names no zone)."""
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError as exc:
        raise InvalidInput(f"LoCoMo: unreadable session date {raw!r}") from exc


def load(path: str | Path) -> tuple[list[Conversation], str]:
    """The conversations of a LoCoMo file and the file's sha256."""
    raw, digest = read_list(path, "LoCoMo", "conversations")
    return [_conversation(c) for c in raw], digest


def _conversation(c: dict[str, Any]) -> Conversation:
    try:
        conv = c["conversation"]
        turns: list[Turn] = []
        n = 1
        while f"session_{n}" in conv or f"session_{n}_date_time" in conv:
            # Iterate the dialog lists, not the date keys: some dates have no dialog.
            at = parse_session_date(conv[f"session_{n}_date_time"]) if f"session_{n}" in conv else None
            for i, t in enumerate(conv.get(f"session_{n}") or []):
                text = t["text"]
                if t.get("blip_caption"):
                    text = f"{text} [shares a photo: {t['blip_caption']}]"
                assert at is not None
                # One second apart, so a session keeps its order when sorted by time.
                turns.append(Turn(str(t["dia_id"]), str(t["speaker"]), text, at + timedelta(seconds=i), n))
            n += 1
        questions = tuple(
            Question(str(q["question"]), int(q["category"]), tuple(str(e) for e in q.get("evidence") or ()))
            for q in c["qa"]
        )
        return Conversation(str(c["sample_id"]), tuple(turns), questions)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"LoCoMo: a conversation is not in the expected shape: {exc!r}") from exc


def ingest(memory: Memory, conv: Conversation) -> None:
    """Append the conversation's turns as events of subject ``sample_id`` (idempotent)."""
    memory.append(
        [
            NewEvent(
                tenant_id=TENANT,
                subject_id=conv.sample_id,
                event_id=f"{conv.sample_id}:{t.dia_id}",
                actor=t.speaker,
                text=t.text,
                occurred_at=t.at,
                payload={"session": t.session},
            )
            for t in conv.turns
        ]
    )


@dataclass
class Side:
    """One retrieval method's figures over a set of questions."""

    recall: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def add(self, found: float, tokens: int, seconds: float = 0.0) -> None:
        self.recall.append(found)
        self.tokens.append(tokens)
        self.seconds.append(seconds)

    def summary(self) -> dict[str, float]:
        n = len(self.recall) or 1
        return {
            "questions": len(self.recall),
            "evidence_recall": sum(self.recall) / n,
            "tokens": sum(self.tokens) / n,
            "p50_ms": percentile_ms(self.seconds, 0.50),
            "p99_ms": percentile_ms(self.seconds, 0.99),
        }


@dataclass
class Report:
    """Per category and overall, for lossgate and each baseline."""

    sha256: str
    budget: int
    conversations: int
    sides: dict[str, dict[str, Side]]  # side -> category name (and "overall") -> figures
    embedder: str | None = None  # the model of "lossgate + semantic"
    embed_seconds: float = 0.0  # computing every turn's vector (off the recall path)
    reranker: str | None = None  # the model of "lossgate + rerank"

    @property
    def published_data(self) -> bool:
        return self.sha256 == PUBLISHED_SHA256

    def to_json(self) -> dict[str, Any]:
        full = self.sides["full context"]["overall"].summary()["tokens"]
        out: dict[str, Any] = {
            "data_sha256": self.sha256,
            "published_data": self.published_data,
            "budget_tokens": self.budget,
            "conversations": self.conversations,
            "embedder": self.embedder,
            "embed_seconds": round(self.embed_seconds, 2),
            "reranker": self.reranker,
            "sides": {},
        }
        for name, cats in self.sides.items():
            out["sides"][name] = {cat: side.summary() for cat, side in cats.items()}
            overall = out["sides"][name]["overall"]
            overall["token_reduction"] = 1 - overall["tokens"] / full if full else 0.0
        return out


def _bm25_ranker(turns: tuple[Turn, ...], *, speaker: bool = False) -> Callable[[str], list[int]]:
    return bm25_ranker([f"{t.speaker} {t.text}" if speaker else t.text for t in turns])


def _fill(order: Iterable[int], turns: tuple[Turn, ...], costs: list[int], budget: int) -> tuple[set[str], int]:
    chosen, used = fill(order, costs, budget)
    return {turns[i].dia_id for i in chosen}, used


def evaluate(
    memory: Memory,
    conversations: list[Conversation],
    *,
    budget: int = 2000,
    sha256: str = "",
    counter: TokenCounter | None = None,
    progress: Callable[[int], None] | None = None,
    development: int = 0,
) -> Report:
    """Ingest, consolidate and recall every question (see the module docstring); the first
    ``development`` conversations are reported apart from the others."""
    count = counter or default_counter()
    semantic, reranker = memory.embedder is not None, memory.reranker
    # the lossgate sides beyond the lexical ones: name -> the embedder and reranker it recalls with
    more: dict[str, tuple[Any, Any]] = {}
    if semantic:
        more["lossgate + semantic"] = (memory.embedder, None)
    if reranker is not None:
        more["lossgate + rerank"] = (None, reranker)
        if semantic:
            more["lossgate + semantic + rerank"] = (memory.embedder, reranker)
    names = ("lossgate", "lossgate, loss-blind", *more, "bm25", "bm25 + speaker", "recency", "full context")
    sides: dict[str, dict[str, Side]] = {name: defaultdict(Side) for name in names}
    embed_seconds = 0.0
    for number, conv in enumerate(conversations):
        ingest(memory, conv)
        memory.consolidate(TENANT, conv.sample_id)
        if semantic:
            t0 = time.perf_counter()
            memory.admin.embed(TENANT, conv.sample_id)
            embed_seconds += time.perf_counter() - t0
        by_id = {t.dia_id: t for t in conv.turns}
        dropped = {e.split(":", 1)[1] for e in dropped_events(memory.store, TENANT, conv.sample_id)}
        group = ("development" if number < development else "held-out") if development else None
        costs = [count(t.line) + 1 for t in conv.turns]
        full_tokens = sum(costs)
        rank, rank_speaker = _bm25_ranker(conv.turns), _bm25_ranker(conv.turns, speaker=True)
        newest_first = range(len(conv.turns) - 1, -1, -1)
        for q in conv.questions:
            if q.category not in CATEGORIES:
                continue
            evidence = [e for e in q.evidence if e in by_id]
            if not evidence:
                continue
            t0 = time.perf_counter()
            result = recall(memory.store, TENANT, conv.sample_id, query=q.text, budget=budget)  # lexical
            took = time.perf_counter() - t0
            found = _found(result, evidence, by_id)
            t0 = time.perf_counter()
            blind = recall(memory.store, TENANT, conv.sample_id, query=q.text, budget=budget, loss_aware=False)
            blind_took = time.perf_counter() - t0
            found_blind = _found(blind, evidence, by_id)
            ranked: dict[str, tuple[RecallResult, float]] = {}
            for name, (embedder, rerank) in more.items():
                t0 = time.perf_counter()
                found_by = recall(
                    memory.store,
                    TENANT,
                    conv.sample_id,
                    query=q.text,
                    budget=budget,
                    embedder=embedder,
                    reranker=rerank,
                )
                ranked[name] = (found_by, time.perf_counter() - t0)
            bm25_ids, bm25_tokens = _fill(rank(q.text), conv.turns, costs, budget)
            bm25s_ids, bm25s_tokens = _fill(rank_speaker(q.text), conv.turns, costs, budget)
            recent_ids, recent_tokens = _fill(newest_first, conv.turns, costs, budget)
            cats = [CATEGORIES[q.category], "overall", *(["dropped"] if dropped & set(evidence) else [])]
            cats += [f"{group} {c}" for c in cats[1:]] if group else []
            for cat in cats:
                sides["lossgate"][cat].add(len(found) / len(evidence), result.tokens, took)
                sides["lossgate, loss-blind"][cat].add(len(found_blind) / len(evidence), blind.tokens, blind_took)
                for name, (found_by, found_took) in ranked.items():
                    sides[name][cat].add(
                        len(_found(found_by, evidence, by_id)) / len(evidence), found_by.tokens, found_took
                    )
                sides["bm25"][cat].add(sum(e in bm25_ids for e in evidence) / len(evidence), bm25_tokens)
                sides["bm25 + speaker"][cat].add(sum(e in bm25s_ids for e in evidence) / len(evidence), bm25s_tokens)
                sides["recency"][cat].add(sum(e in recent_ids for e in evidence) / len(evidence), recent_tokens)
                sides["full context"][cat].add(1.0, full_tokens)
            if progress:
                progress(1)
    if "overall" not in sides["lossgate"]:
        raise InvalidInput(
            f"LoCoMo: none of the {len(conversations)} conversations has a question of categories 1-4 "
            "with an evidence turn it holds: nothing to measure"
        )
    return Report(
        sha256=sha256,
        budget=budget,
        conversations=len(conversations),
        sides={k: dict(v) for k, v in sides.items()},
        embedder=memory.embedder.model if memory.embedder else None,
        embed_seconds=embed_seconds,
        reranker=reranker.model if reranker else None,
    )


def _found(result: RecallResult, evidence: list[str], by_id: dict[str, Turn]) -> list[str]:
    """The evidence turns a recall handed back: as events, or as lines of the summary."""
    returned = {e.event_id.split(":", 1)[1] for e in result.events}
    lines = set((result.summary or "").splitlines())
    return [e for e in evidence if e in returned or by_id[e].line in lines]


def question_count(conversations: list[Conversation]) -> int:
    """How many questions :func:`evaluate` will recall (for a progress bar)."""
    total = 0
    for c in conversations:
        ids = {t.dia_id for t in c.turns}
        total += sum(1 for q in c.questions if q.category in CATEGORIES and any(e in ids for e in q.evidence))
    return total
