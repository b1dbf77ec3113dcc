"""The LongMemEval benchmark: does recall hand back the sessions and turns a question needs?

LongMemEval (Wu et al., ICLR 2025; ``github.com/xiaowu0162/LongMemEval``, data on Hugging
Face) ships ``longmemeval_s.json``, ``longmemeval_m.json`` and ``longmemeval_oracle.json``:
each a JSON list of question instances, every one with its own chat history (the
*haystack*: dated sessions of ``user`` and ``assistant`` turns). The evidence is marked
twice: ``answer_session_ids`` names the sessions holding it, and a turn holding it carries
``"has_answer": true``. A question whose id ends in ``_abs`` is an abstention question:
what it asks is not in the history. The data is never shipped with lossgate: :func:`load`
takes its path and returns the file's sha256 with the instances.

The run (:func:`evaluate`), one instance at a time:

1. the haystack becomes the events of one subject (tenant ``longmemeval``, subject the
   ``question_id``: each question has its own history): every turn an event, its actor
   the role, its time its session's date (turns one second apart, so a session keeps its
   order), its id ``<question_id>:<session position>:<turn position>`` (event ids are
   unique per tenant; positions in the file, so a session id given twice cannot merge two
   sessions), its payload the session's id;
2. the subject is consolidated with the default compressor (the report counts the
   attempts by status: a summary the gate rejects leaves recall on raw memory), and with
   an embedder every turn is embedded (:meth:`~lossgate.Admin.embed`);
3. the question is recalled with its text as the query at a fixed token budget,
   lexically, and with an embedder also hybrid (``lossgate + semantic``). A turn counts as
   handed back when it comes back as an event or as a line of the returned summary
   (``- role: text``, the way the deterministic compressor writes it). Two figures:
   *session recall*, the share of the question's ``answer_session_ids`` of which some turn
   was handed back (a summary line that several sessions hold names none of them), and
   *turn recall*, the share of its ``has_answer`` turns handed back. An answer session id
   that names no session of the haystack is left out (and counted); a question with
   neither figure, unless an abstention one, is skipped (named, and not ingested).
   ``question_date`` is read and checked, and not passed to recall.

Figures are per ``question_type`` and ``overall``; abstention questions are recalled the
same way but reported under ``abstention`` only, never in ``overall``. In the same run, on
the same questions, budget and token counter (:mod:`~lossgate.evaluation.baselines`): the
full history (recall 1 by definition, at its full size); plain BM25 over each turn's text,
filling the budget in rank order; the same over role and text (lossgate's index holds
both); and the most recent turns by time, filling the budget. As in
:mod:`~lossgate.evaluation.locomo`, ``lossgate`` ranks loss-aware and ``lossgate,
loss-blind`` without it, and ``dropped`` holds the questions with a ``has_answer`` turn
that the published summary lists as dropped. Latency (p50/p99) is timed for the recalls
and the BM25 baselines (ranking and filling); the other baselines are not timed.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StringConstraints,
    ValidationError,
    model_validator,
)

from lossgate.api.memory import Memory
from lossgate.consolidate.tokens import TokenCounter, default_counter
from lossgate.errors import InvalidInput
from lossgate.evaluation.baselines import bm25_ranker, fill, percentile_ms, read_list
from lossgate.model.derived_records import RecallResult
from lossgate.model.limits import MAX_ID_CHARS, Id, Label, Text
from lossgate.model.records import NewEvent
from lossgate.model.wording import one_line
from lossgate.recall.read import dropped_events, recall

__all__ = [
    "QUESTION_TYPES",
    "ABSTENTION",
    "TENANT",
    "Turn",
    "Instance",
    "HaystackTurn",
    "load",
    "ingest",
    "evaluate",
    "Scores",
    "Report",
]

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
ABSTENTION = "abstention"
TENANT = "longmemeval"
# "2023/05/20 (Sat) 02:21", as the data writes every date; the weekday is optional.
_DATE_FORMATS = ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M")


def parse_date(raw: Any) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` -> an aware datetime (UTC: the data names no zone)."""
    if not isinstance(raw, str):
        raise ValueError(f"a date is a string like '2023/05/20 (Sat) 02:21', not {type(raw).__name__}")
    for form in _DATE_FORMATS:
        try:
            return datetime.strptime(raw.strip(), form).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unreadable date {raw!r} (expected like '2023/05/20 (Sat) 02:21')")


_Date = Annotated[datetime, BeforeValidator(parse_date)]


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("is blank")
    return value


_Query = Annotated[Label, AfterValidator(_not_blank)]  # a recall's query: at most 4,096 characters
_Name = Annotated[str, StringConstraints(min_length=1)]


class Turn(BaseModel):
    """One turn of a haystack session as the file holds it (other keys are ignored)."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")

    role: Literal["user", "assistant"]
    content: Text  # an event's text: at most 65,536 characters, no NUL
    has_answer: bool = False


class Instance(BaseModel):
    """One question with its own haystack (other keys, ``answer`` among them, are ignored)."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")

    question_id: Id  # the subject of its haystack
    question_type: _Name
    question: _Query  # the recall's query
    question_date: _Date
    haystack_session_ids: list[str]
    haystack_dates: list[_Date]
    haystack_sessions: list[list[Turn]]
    answer_session_ids: list[str]

    @model_validator(mode="after")
    def _parallel(self) -> Instance:
        sessions = len(self.haystack_sessions)
        for name in ("haystack_session_ids", "haystack_dates"):
            if len(getattr(self, name)) != sessions:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries for {sessions} haystack_sessions")
        longest = f"{self.question_id}:{sessions}:{max(map(len, self.haystack_sessions), default=0)}"
        if len(longest) > MAX_ID_CHARS:
            raise ValueError(
                f"question_id is too long to name its turns' events ({longest!r} is over {MAX_ID_CHARS} characters)"
            )
        return self

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")

    def turns(self) -> list[HaystackTurn]:
        """Every turn of the haystack, in the file's order, dated by its session."""
        return [
            HaystackTurn(self.question_id, n, m, t.role, t.content, at + timedelta(seconds=m), t.has_answer)
            for n, (at, session) in enumerate(zip(self.haystack_dates, self.haystack_sessions, strict=False))
            for m, t in enumerate(session)
        ]


@dataclass(frozen=True)
class HaystackTurn:
    question_id: str
    session: int  # the session's position in the haystack
    index: int  # the turn's position in its session
    role: str
    text: str
    at: datetime
    evidence: bool

    @property
    def event_id(self) -> str:
        return f"{self.question_id}:{self.session}:{self.index}"

    @property
    def line(self) -> str:
        """The turn as a conversation line, the way the deterministic compressor writes it."""
        return f"- {one_line(self.role)}: {one_line(self.text)}"


def load(path: str | Path, *, limit: int | None = None) -> tuple[list[Instance], str]:
    """The question instances of a LongMemEval file (the first ``limit`` of them) and the
    file's sha256. A malformed instance is an :class:`~lossgate.errors.InvalidInput` naming
    it and the field."""
    raw, digest = read_list(path, "LongMemEval", "question instances")
    instances: list[Instance] = []
    seen: set[str] = set()
    for number, item in enumerate(raw[:limit] if limit is not None else raw):
        instance = _instance(number, item)
        if instance.question_id in seen:
            raise InvalidInput(
                f"LongMemEval: instance {number} ({instance.question_id!r}): question_id is given "
                "twice in the file (each question's haystack is its own subject)"
            )
        seen.add(instance.question_id)
        instances.append(instance)
    return instances, digest


def _instance(number: int, item: Any) -> Instance:
    if not isinstance(item, dict):
        raise InvalidInput(f"LongMemEval: instance {number} is a {type(item).__name__}, not an object")
    try:
        return Instance.model_validate(item)
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]
        qid = item.get("question_id")
        name = f"instance {number} ({qid!r})" if isinstance(qid, str) else f"instance {number}"
        where = _field(problem["loc"])
        message = problem["msg"].removeprefix("Value error, ")
        raise InvalidInput(f"LongMemEval: {name}: {where + ': ' if where else ''}{message}") from None


def _field(loc: tuple[int | str, ...]) -> str:
    """``('haystack_sessions', 3, 2, 'content')`` -> ``haystack_sessions[3][2].content``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def ingest(memory: Memory, instance: Instance) -> None:
    """Append the instance's haystack as the events of subject ``question_id`` (idempotent)."""
    ids = instance.haystack_session_ids
    memory.append(
        [
            NewEvent(
                tenant_id=TENANT,
                subject_id=instance.question_id,
                event_id=t.event_id,
                actor=t.role,
                text=t.text,
                occurred_at=t.at,
                payload={"session_id": ids[t.session]},
            )
            for t in instance.turns()
        ]
    )


@dataclass
class Scores:
    """One retrieval method's figures over a set of questions. A question adds its session
    recall when it names an answer session, its turn recall when it has a ``has_answer`` turn."""

    session: list[float] = field(default_factory=list)
    turn: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def add(self, session: float | None, turn: float | None, tokens: int, seconds: float | None = None) -> None:
        if session is not None:
            self.session.append(session)
        if turn is not None:
            self.turn.append(turn)
        self.tokens.append(tokens)
        if seconds is not None:
            self.seconds.append(seconds)

    def summary(self) -> dict[str, Any]:
        n = len(self.tokens)
        timed = bool(self.seconds)
        return {
            "questions": n,
            "session_recall": sum(self.session) / len(self.session) if self.session else None,
            "session_questions": len(self.session),
            "turn_recall": sum(self.turn) / len(self.turn) if self.turn else None,
            "turn_questions": len(self.turn),
            "tokens": sum(self.tokens) / n if n else 0.0,
            "p50_ms": percentile_ms(self.seconds, 0.50) if timed else None,
            "p99_ms": percentile_ms(self.seconds, 0.99) if timed else None,
        }


@dataclass
class Report:
    """Per question type, ``overall``, ``abstention`` and ``dropped``, for lossgate and each baseline."""

    sha256: str
    budget: int
    instances: int
    sides: dict[str, dict[str, Scores]]  # side -> group -> figures
    skipped: list[str] = field(default_factory=list)  # questions with no evidence to score
    unmatched_answer_sessions: int = 0  # answer_session_ids naming no session of their haystack
    consolidations: dict[str, int] = field(default_factory=dict)  # attempt status -> how many
    embedder: str | None = None  # the model of "lossgate + semantic"
    embed_seconds: float = 0.0  # computing every turn's vector (off the recall path)

    def to_json(self) -> dict[str, Any]:
        full = self.sides["full context"].get("overall")
        full_tokens = full.summary()["tokens"] if full else 0.0
        out: dict[str, Any] = {
            "data_sha256": self.sha256,
            "budget_tokens": self.budget,
            "instances": self.instances,
            "skipped": self.skipped,
            "unmatched_answer_sessions": self.unmatched_answer_sessions,
            "consolidations": dict(sorted(self.consolidations.items())),
            "embedder": self.embedder,
            "embed_seconds": round(self.embed_seconds, 2),
            "sides": {},
        }
        for name, groups in self.sides.items():
            out["sides"][name] = {group: scores.summary() for group, scores in groups.items()}
            if "overall" in out["sides"][name]:
                overall = out["sides"][name]["overall"]
                overall["token_reduction"] = 1 - overall["tokens"] / full_tokens if full_tokens else 0.0
        return out


def evaluate(
    memory: Memory,
    instances: list[Instance],
    *,
    budget: int = 2000,
    sha256: str = "",
    counter: TokenCounter | None = None,
    progress: Callable[[int], None] | None = None,
) -> Report:
    """Ingest, consolidate and recall every instance's question (see the module docstring)."""
    count = counter or default_counter()
    semantic = memory.embedder is not None
    names = (
        "lossgate",
        "lossgate, loss-blind",
        *(["lossgate + semantic"] if semantic else []),
        "bm25",
        "bm25 + role",
        "recency",
        "full context",
    )
    sides: dict[str, dict[str, Scores]] = {name: defaultdict(Scores) for name in names}
    skipped: list[str] = []
    unmatched = 0
    consolidations: dict[str, int] = defaultdict(int)
    embed_seconds = 0.0
    for inst in instances:
        qid = inst.question_id
        turns = inst.turns()
        haystack = _Haystack(inst, turns)
        unmatched += haystack.unmatched
        if not haystack.answer_sessions and not haystack.evidence and not inst.abstention:
            skipped.append(qid)  # nothing to score: not ingested either
            if progress:
                progress(1)
            continue
        ingest(memory, inst)
        consolidations[memory.consolidate(TENANT, qid).status] += 1
        if semantic:
            t0 = time.perf_counter()
            memory.admin.embed(TENANT, qid)
            embed_seconds += time.perf_counter() - t0
        dropped = dropped_events(memory.store, TENANT, qid)
        costs = [count(t.line) + 1 for t in turns]
        groups = [ABSTENTION] if inst.abstention else [inst.question_type, "overall"]
        if not inst.abstention and dropped & {turns[i].event_id for i in haystack.evidence}:
            groups.append("dropped")

        def add(side: str, returned: tuple[set[int], set[int]], tokens: int, seconds: float | None = None) -> None:
            session, turn = haystack.score(*returned)  # noqa: B023 - called within this iteration
            for group in groups:  # noqa: B023 - called within this iteration
                sides[side][group].add(session, turn, tokens, seconds)

        t0 = time.perf_counter()
        result = recall(memory.store, TENANT, qid, query=inst.question, budget=budget, counter=count)  # lexical
        add("lossgate", haystack.returned(result), result.tokens, time.perf_counter() - t0)
        t0 = time.perf_counter()
        blind = recall(memory.store, TENANT, qid, query=inst.question, budget=budget, counter=count, loss_aware=False)
        add("lossgate, loss-blind", haystack.returned(blind), blind.tokens, time.perf_counter() - t0)
        if semantic:
            t0 = time.perf_counter()
            hybrid = recall(
                memory.store, TENANT, qid, query=inst.question, budget=budget, counter=count, embedder=memory.embedder
            )
            add("lossgate + semantic", haystack.returned(hybrid), hybrid.tokens, time.perf_counter() - t0)
        for side, docs in (("bm25", [t.text for t in turns]), ("bm25 + role", [f"{t.role} {t.text}" for t in turns])):
            rank = bm25_ranker(docs)  # indexing is not timed: lossgate's index is built before recall too
            t0 = time.perf_counter()
            chosen, used = fill(rank(inst.question), costs, budget)
            add(side, haystack.chosen(chosen), used, time.perf_counter() - t0)
        # By time, not by the file's order: longmemeval_oracle.json lists its sessions unsorted.
        newest_first = sorted(range(len(turns)), key=lambda i: (turns[i].at, i), reverse=True)
        recent, recent_tokens = fill(newest_first, costs, budget)
        add("recency", haystack.chosen(recent), recent_tokens)
        add("full context", haystack.chosen(set(range(len(turns)))), sum(costs))
        if progress:
            progress(1)
    return Report(
        sha256=sha256,
        budget=budget,
        instances=len(instances),
        sides={k: dict(v) for k, v in sides.items()},
        skipped=skipped,
        unmatched_answer_sessions=unmatched,
        consolidations=dict(consolidations),
        embedder=memory.embedder.model if memory.embedder else None,
        embed_seconds=embed_seconds,
    )


class _Haystack:
    """One instance's turns, where its evidence is, and what a recall handed back of them."""

    def __init__(self, inst: Instance, turns: list[HaystackTurn]) -> None:
        self.turns = turns
        self.by_event = {t.event_id: i for i, t in enumerate(turns)}
        self.by_line: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(turns):
            self.by_line[t.line].append(i)
        present = set(inst.haystack_session_ids)
        named = list(dict.fromkeys(inst.answer_session_ids))
        self.answer_sessions = [sid for sid in named if sid in present]
        self.unmatched = len(named) - len(self.answer_sessions)
        # A session id the haystack gives twice: a turn of either position counts.
        self.positions = {
            sid: {n for n, s in enumerate(inst.haystack_session_ids) if s == sid} for sid in self.answer_sessions
        }
        self.evidence = [i for i, t in enumerate(turns) if t.evidence]

    def returned(self, result: RecallResult) -> tuple[set[int], set[int]]:
        """The turns a recall handed back (as events, or as lines of the summary) and the
        sessions it handed a turn of (a summary line that several sessions hold names none)."""
        as_events = {self.by_event[e.event_id] for e in result.events if e.event_id in self.by_event}
        sessions = {self.turns[i].session for i in as_events}
        turns = set(as_events)
        for line in set((result.summary or "").splitlines()):
            holders = self.by_line.get(line)
            if not holders:
                continue
            turns.update(holders)
            if len({self.turns[i].session for i in holders}) == 1:
                sessions.add(self.turns[holders[0]].session)
        return turns, sessions

    def chosen(self, positions: set[int]) -> tuple[set[int], set[int]]:
        """What a baseline puts in front of a model: the turns and their sessions."""
        return positions, {self.turns[i].session for i in positions}

    def score(self, turns: set[int], sessions: set[int]) -> tuple[float | None, float | None]:
        """(session recall, turn recall); ``None`` for a figure the question has no evidence for."""
        session = (
            (sum(bool(self.positions[sid] & sessions) for sid in self.answer_sessions) / len(self.answer_sessions))
            if self.answer_sessions
            else None
        )
        turn = sum(i in turns for i in self.evidence) / len(self.evidence) if self.evidence else None
        return session, turn
