"""Recall's reranking stage, on every store.

The reranker is a real HTTP client (:class:`HttpReranker`) talking to a scripted
``/v1/rerank`` server on loopback whose "model" scores a text by the marker words it
holds, so a test decides which candidates must win. What must hold: the top of the first
ranking comes back in the order the scores give, hits past what recall returns among it;
critical facts stay first; only valid text of the recall's own tenant and subject is ever
sent (checked on the request bodies the server received); every failure (a server error,
a timeout, an answer that is not JSON, the wrong number of scores) leaves the first ranking
exactly as it is without a reranker, and the recall record says which happened. The
reranker is asked after recall's read transaction has closed: while it works, recall holds no
connection in a transaction and no snapshot, and a deletion made meanwhile never reaches what
recall returns.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import lossgate
from lossgate import NewEvent, NewFact
from lossgate.recall.read import recall
from lossgate.semantic import HttpEmbedder, HttpEmbedderConfig, HttpReranker, HttpRerankerConfig, reorder
from lossgate.testing.chat_server import Reply, ScriptedChatServer
from lossgate.testing.embeddings import concept_embeddings
from lossgate.testing.rerank import rerank_reply, scored_by_words
from tests.support.cli import one_line_error

T, S = "acme", "u1"
WEIGHTS = {"roses": 5.0, "tulips": 3.0}


@pytest.fixture
def server() -> Iterator[ScriptedChatServer]:
    with ScriptedChatServer(default=scored_by_words(WEIGHTS)) as srv:
        yield srv


def _reranker(server: ScriptedChatServer, **config) -> HttpReranker:
    settings = {"base_url": server.url, "model": "scripted", "timeout_s": 2.0, "backoff_s": 0.01, **config}
    return HttpReranker(HttpRerankerConfig(**settings))


@pytest.fixture(autouse=True)
def no_cooldown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no reranker cooling down from another test's failure."""
    monkeypatch.setattr(reorder, "_down_until", type(reorder._down_until)())


@pytest.fixture
def garden(memory: lossgate.Memory) -> lossgate.Memory:
    """Thirty turns about the garden, two naming a flower the scripted model scores; consolidated."""
    flowers = {3: "roses", 10: "tulips"}
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id=f"g{i}",
                text=f"we talked about the garden again{' and the ' + flowers[i] if i in flowers else ''}",
            )
            for i in range(30)
        ]
    )
    assert memory.consolidate(T, S).status == "published"
    return memory


def _ids(result: lossgate.RecallResult) -> list[str]:
    """The events in the order recall ranked them (the record's candidates; the result is in seq order)."""
    return [i for i in result.record.candidate_ids if i.startswith(("g", "x", "o"))]


def _sent(server: ScriptedChatServer) -> list[str]:
    return [
        d
        for body, path in zip(server.requests, server.paths, strict=False)
        if path == "/v1/rerank"
        for d in body["documents"]
    ]


def test_the_reranker_reorders_the_hits_as_it_scores_them(garden, server):
    first = recall(garden.store, T, S, query="garden", k=3, context=False)
    assert "rerank" not in first.record.filters
    assert not {"g3", "g10"} & set(_ids(first))  # the words alone rank them past the three returned
    result = recall(garden.store, T, S, query="garden", k=3, context=False, reranker=_reranker(server))
    assert result.mode == "summary"
    assert _ids(result) == ["g3", "g10", _ids(first)[0]]  # by score, then the first ranking's order
    assert result.record.filters["rerank"] == "used: scripted"
    [body] = server.requests
    assert body["model"] == "scripted" and body["query"] == "garden" and body["top_n"] == len(body["documents"]) == 30
    full = recall(garden.store, T, S, query="garden", k=30, context=False)
    order = _ids(full)
    assert body["documents"] == [f"user: {e.text}" for e in sorted(full.events, key=lambda e: order.index(e.event_id))]


def test_only_the_depth_of_the_first_ranking_is_reranked(garden, server):
    first = recall(garden.store, T, S, query="garden", k=5, context=False)
    result = recall(garden.store, T, S, query="garden", k=5, context=False, reranker=_reranker(server, depth=5))
    assert len(server.requests[0]["documents"]) == 5
    assert not {"g3", "g10"} & set(_ids(result))  # past the depth: never sent, never brought up
    assert set(_ids(result)) == set(_ids(first))
    order = _ids(recall(garden.store, T, S, query="garden", k=30, context=False))  # the first ranking, whole
    nearer, farther = sorted(["g3", "g10"], key=order.index)
    depth = order.index(farther)  # reaches one flower and not the other
    assert order.index(nearer) >= 5
    result = recall(garden.store, T, S, query="garden", k=5, context=False, reranker=_reranker(server, depth=depth))
    assert _ids(result)[0] == nearer and farther not in _ids(result)


def test_under_a_budget_the_reranked_hits_are_what_fits_first(garden, server):
    first = recall(garden.store, T, S, query="garden flowers", budget=150)
    assert not {"g3", "g10"} & {e.event_id for e in first.events}
    result = recall(garden.store, T, S, query="garden flowers", budget=150, reranker=_reranker(server))
    assert {"g2", "g3", "g4", "g9", "g10", "g11"} <= {e.event_id for e in result.events}  # each with its neighbours
    assert result.tokens <= 150


def test_facts_are_reranked_and_critical_ones_stay_first(memory, server):
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="src", text="we chatted about the garden")])
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="crit",
            predicate="agent.instruction",
            value="never dig the garden before noon",
            source_event_ids=["src"],
        )
    )
    for i, topic in enumerate(["garden roses", "garden paths", "garden sheds", "garden ponds"]):
        memory.assert_fact(
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id=f"t{i}",
                predicate="chat.topic",
                value=topic,
                source_event_ids=["src"],
            )
        )
    first = recall(memory.store, T, S, query="garden", k=2)
    assert first.facts[0].fact_id == "crit" and "t0" not in {f.fact_id for f in first.facts}
    result = recall(memory.store, T, S, query="garden", k=2, reranker=_reranker(server))
    assert [f.fact_id for f in result.facts][:2] == ["crit", "t0"]
    assert len(result.facts) == 3  # the critical fact and k others
    sent = _sent(server)
    assert "chat topic garden roses" in sent
    assert not any("noon" in d for d in sent)  # a critical fact is never ranked: it is always returned


def test_hybrid_ranking_is_reranked_too(garden, server):
    def route(body):  # one server: embeddings for the embedder, scores for the reranker
        return concept_embeddings(body) if "input" in body else scored_by_words(WEIGHTS)(body)

    server._default = route
    garden.embedder = HttpEmbedder(HttpEmbedderConfig(base_url=server.url, model="concepts", max_retries=0))
    garden.reranker = _reranker(server)
    garden.admin.embed(T, S)
    result = garden.recall(T, S, query="garden", k=3, context=False)
    assert result.record.filters["semantic"] == "concepts" and result.record.filters["rerank"] == "used: scripted"
    assert _ids(result)[:2] == ["g3", "g10"]


@pytest.mark.parametrize(
    "script, recorded",
    [
        (
            [Reply(status=503, headers={"Retry-After": "0"}, body={"error": {"message": "busy with 'garden'"}})],
            "used: scripted",
        ),
        ([Reply(status=429, headers={"Retry-After": "0.05"})], "used: scripted"),
        ([Reply(delay_s=1.0, body={"results": []})], "failed: timeout"),
        ([Reply(body="{not json")], "failed: malformed answer"),
        ([rerank_reply([1.0, 0.5])], "failed: wrong number of scores"),
        (
            [Reply(body={"results": [{"index": i, "relevance_score": "high"} for i in range(30)]})],
            "failed: malformed answer",
        ),
        ([Reply(status=500, body={"error": {"message": "cannot score 'garden'"}})] * 2, "failed: HTTP 500"),
        ([Reply(status=400, body={"error": {"message": "documents too long"}})], "failed: HTTP 400"),
    ],
)
def test_a_failing_reranker_leaves_the_first_ranking_and_says_so(garden, server, script, recorded):
    first = recall(garden.store, T, S, query="garden", k=3, context=False)
    server.push(*script)
    result = recall(garden.store, T, S, query="garden", k=3, context=False, reranker=_reranker(server, timeout_s=0.5))
    assert result.record.filters["rerank"] == recorded  # the kind of failure, never the server's words
    if recorded.startswith("used"):
        assert len(server.requests) == 2 and _ids(result)[:2] == ["g3", "g10"]  # retried, then reranked
    else:
        assert _ids(result) == _ids(first)
        assert [e.event_id for e in result.events] == [e.event_id for e in first.events]
        assert result.render() == first.render()


def test_a_failed_reranker_is_asked_again_only_after_its_cooldown(garden, server, monkeypatch):
    reranker = _reranker(server, max_retries=0)
    server.push(Reply(status=503))
    assert recall(garden.store, T, S, query="garden", reranker=reranker).record.filters["rerank"] == "failed: HTTP 503"
    calls = len(server.requests)
    later = recall(garden.store, T, S, query="garden", k=3, context=False, reranker=reranker)
    assert len(server.requests) == calls  # within the cooldown: not asked
    assert later.record.filters["rerank"] == "skipped: the reranker failed moments ago"
    other = _reranker(server)
    assert recall(garden.store, T, S, query="garden", reranker=other).record.filters["rerank"] == "used: scripted"
    monkeypatch.setattr(reorder, "_down_until", type(reorder._down_until)())  # the cooldown is over
    again = recall(garden.store, T, S, query="garden", k=3, context=False, reranker=reranker)
    assert again.record.filters["rerank"] == "used: scripted" and _ids(again)[0] == "g3"


def test_a_query_with_nothing_to_reorder_sends_nothing(garden, server):
    reranker = _reranker(server)
    garden.append([NewEvent(tenant_id=T, subject_id=S, event_id="x1", text="a quokka visited")])
    one = recall(garden.store, T, S, query="quokka", reranker=reranker)
    assert one.record.filters["rerank"] == "skipped: fewer than two hits to reorder"
    none = recall(garden.store, T, S, query="what did the", reranker=reranker)  # no content word: no ranking
    assert "rerank" not in none.record.filters
    assert server.requests == []


def test_deleted_revoked_and_foreign_text_never_reaches_the_reranker(garden, server):
    garden.append([NewEvent(tenant_id=T, subject_id=S, event_id="x-src", text="the garden of my secret address")])
    garden.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="x-fact",
            predicate="chat.topic",
            value="garden secret",
            source_event_ids=["x-src"],
        )
    )
    garden.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="old",
            predicate="chat.topic",
            value="garden gnomes",
            source_event_ids=["g0"],
        )
    )
    garden.supersede(
        T,
        S,
        "old",
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="new",
            predicate="chat.topic",
            value="garden benches",
            source_event_ids=["g0"],
        ),
    )
    garden.append([NewEvent(tenant_id=T, subject_id="u2", event_id="o1", text="the garden roses of another subject")])
    garden.append(
        [NewEvent(tenant_id="other-tenant", subject_id=S, event_id="o2", text="the garden roses of another tenant")]
    )
    garden.delete_event(T, S, "g3", reason="user asked")
    garden.revoke_event(T, S, "g10", reason="wrong")
    garden.delete_fact(T, S, "x-fact", reason="forget it")  # its source event goes with it
    reranker = _reranker(server)
    for query in ("garden", "garden roses tulips", "secret garden gnomes"):
        for result in (
            recall(garden.store, T, S, query=query, reranker=reranker),
            recall(garden.store, T, S, query=query, budget=2000, k=50, reranker=reranker),
        ):
            assert result.record.filters["rerank"] == "used: scripted"
            assert not {"g3", "g10", "x-src", "x-fact", "old", "o1", "o2"} & set(result.record.candidate_ids)
    sent = _sent(server)
    assert len(server.requests) == 6 and "chat topic garden benches" in sent
    for word in ("roses", "tulips", "secret", "gnomes", "another"):
        assert not any(word in d for d in sent), word


def test_recall_from_the_cli_reranks_with_the_reranker_it_names(cli, server, monkeypatch, tmp_path):
    monkeypatch.delenv("LOSSGATE_RERANKER", raising=False)
    monkeypatch.delenv("LOSSGATE_RERANKER_MODEL", raising=False)
    turns = tmp_path / "turns.jsonl"
    turns.write_text(
        "".join(
            json.dumps(
                {
                    "type": "event",
                    "tenant_id": T,
                    "subject_id": S,
                    "event_id": f"c{i}",
                    "occurred_at": f"2026-01-05T09:0{i}:00Z",
                    "text": f"the garden {'roses' if i == 1 else 'chat'} {i}",
                }
            )
            + "\n"
            for i in range(6)
        )
    )
    assert cli("ingest", "--quiet", str(turns)).exit_code == 0
    args = ("recall", "--tenant", T, "--subject", S, "-q", "garden", "-k", "1", "--json")
    assert json.loads(cli(*args).stdout)["events"][0]["event_id"] != "c1"  # the words alone rank another first
    found = cli(*args, "--rerank", server.url, "--rerank-model", "scripted")
    assert found.exit_code == 0, found.output
    doc = json.loads(found.stdout)
    assert doc["record"]["filters"]["rerank"] == "used: scripted" and [e["event_id"] for e in doc["events"]] == ["c1"]
    monkeypatch.setenv("LOSSGATE_RERANKER", server.url)
    monkeypatch.setenv("LOSSGATE_RERANKER_MODEL", "scripted")
    assert json.loads(cli(*args).stdout)["record"]["filters"]["rerank"] == "used: scripted"  # from the environment
    monkeypatch.delenv("LOSSGATE_RERANKER_MODEL")
    one_line_error(cli(*args), "LOSSGATE_RERANKER_MODEL names the model")
    one_line_error(cli(*args, "--rerank", server.url), "--rerank-model names the model the server at --rerank")
    one_line_error(
        cli(*args, "--rerank", "cross-encoder/ms-marco-MiniLM-L-6-v2"), "--rerank", "folder", "never by name"
    )
    one_line_error(cli(*args, "--rerank", "http://[::1", "--rerank-model", "m"), "base_url")


def test_the_locomo_harness_measures_the_reranking_stage_beside_the_rest(memory, server, tmp_path):
    from lossgate.evaluation import locomo
    from lossgate.testing.rerank import word_overlap
    from tests.support.locomo import conversation

    server._default = word_overlap
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(conversation()))
    convs, digest = locomo.load(path)
    memory.reranker = _reranker(server)
    report = locomo.evaluate(memory, convs, budget=120, sha256=digest).to_json()
    assert report["reranker"] == "scripted"
    sides = report["sides"]
    assert {"lossgate", "lossgate + rerank"} <= set(sides) and "lossgate + semantic + rerank" not in sides
    assert sides["lossgate + rerank"]["overall"]["questions"] == sides["lossgate"]["overall"]["questions"] == 3
    assert sides["lossgate + rerank"]["overall"]["tokens"] <= 120
    assert len(server.requests) == 3  # one request a question, for the reranked side alone


def test_eval_locomo_reranks_from_the_cli(server, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from lossgate.cli import app
    from lossgate.testing.rerank import word_overlap
    from tests.support.locomo import conversation

    monkeypatch.delenv("LOSSGATE_RERANKER_MODEL", raising=False)
    server._default = word_overlap
    path, out = tmp_path / "mini.json", tmp_path / "report.json"
    path.write_text(json.dumps(conversation()))
    args = ["eval", "locomo", "--data", str(path), "--budget", "120", "--json", str(out)]
    result = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"}).invoke(
        app, [*args, "--rerank", server.url, "--rerank-model", "scripted"]
    )
    assert result.exit_code == 0, result.output
    assert "lossgate + rerank" in result.output and "rerank: scripted" in result.output
    assert json.loads(out.read_text())["sides"]["lossgate + rerank"]["overall"]["questions"] == 3
    refused = CliRunner().invoke(app, [*args, "--rerank", str(tmp_path / "no-such-model")])
    assert refused.exit_code == 2 and "--rerank" in refused.output and "no cross-encoder folder" in refused.output


def _while_reranking(server: ScriptedChatServer, act: Callable[[], None]) -> None:
    """The scripted model runs ``act`` while it handles the request, then scores by WEIGHTS."""
    score = scored_by_words(WEIGHTS)

    def answer(body: dict[str, Any]) -> Reply:
        act()
        return score(body)

    server._default = answer


def _snapshots_held(url: str) -> list[tuple[Any, ...]]:
    """The other sessions of the test database inside a transaction or holding a snapshot."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            "SELECT pid, state, backend_xmin FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
            "AND (state LIKE 'idle in transaction%' OR xact_start IS NOT NULL OR backend_xmin IS NOT NULL)"
        ).fetchall()


def test_no_transaction_is_open_while_the_reranker_works(garden, server, store_url):
    """On PostgreSQL no session of the database is in a transaction or holds a snapshot while
    the reranker answers; on SQLite a writer commits meanwhile without waiting and the WAL can
    be checkpointed whole, which a reader's open snapshot would prevent. The append made
    meanwhile takes nothing out of memory: what recall returns comes from its one read."""
    seen: list[Any] = []
    other = lossgate.open(store_url)

    def look() -> None:
        started = time.monotonic()
        other.append([NewEvent(tenant_id=T, subject_id=S, event_id=f"w{len(seen)}", text="a later turn")])
        seen.append(("append took", time.monotonic() - started))
        if garden.store.engine == "postgres":
            seen.append(("held", _snapshots_held(store_url)))
        else:
            check = sqlite3.connect(garden.store.path, timeout=0)
            try:
                seen.append(("checkpoint blocked", check.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]))
            finally:
                check.close()

    _while_reranking(server, look)
    try:
        result = recall(
            garden.store, T, S, query="garden", k=3, context=False, reranker=_reranker(server, timeout_s=10.0)
        )
    finally:
        other.close()
    assert result.record.filters["rerank"] == "used: scripted" and _ids(result)[:2] == ["g3", "g10"]
    assert result.record.clock.high_water == 30  # an append moves no input_epoch: chosen from the one read
    (_, took), (what, value) = seen
    assert took < 1.0
    assert value in ([], 0), f"{what}: {value}"


@pytest.mark.parametrize("deleted", ["event", "fact"])
def test_a_deletion_while_the_reranker_works_never_reaches_the_result(garden, server, store_url, deleted):
    """The scripted model deletes the rose turn (or a fact drawn from it, which erases it
    too), through another Memory, before it answers. The deletion moves the subject's input
    epoch, so recall reads again and orders that read by the scores it was given: the
    deleted text is neither returned nor a candidate, the summary it stales is not returned,
    the other scored hit still leads, and the recall's attestation holds against the store."""
    if deleted == "fact":
        garden.assert_fact(
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="f-roses",
                predicate="chat.topic",
                value="garden roses",
                source_event_ids=["g3"],
            )
        )
    before = recall(garden.store, T, S, query="garden roses", k=3, reranker=_reranker(server))
    assert "roses" in before.render() and "g3" in before.record.candidate_ids
    other = lossgate.open(store_url)

    def delete() -> None:
        if deleted == "event":
            other.delete_event(T, S, "g3", reason="user asked")
        else:
            other.delete_fact(T, S, "f-roses", reason="user asked")

    _while_reranking(server, delete)
    try:
        result = recall(garden.store, T, S, query="garden roses", k=3, reranker=_reranker(server, timeout_s=10.0))
    finally:
        other.close()
    assert any("roses" in d for d in _sent(server))  # it was sent: it was memory when the read ran
    assert result.record.filters["rerank"] == "used: scripted"
    assert "roses" not in result.render()
    assert not {"g3", "f-roses"} & set(result.record.candidate_ids)
    assert result.mode == "raw_fallback" and result.summary is None  # the deletion staled the summary
    assert _ids(result)[0] == "g10"  # the scores given still order what is left
    verdict = garden.verify_recall(T, S, result.record.recall_id)
    assert verdict.state == "unchanged" and verdict.rendered_matches


def test_a_summary_quarantined_while_the_reranker_works_is_not_returned(garden, server, store_url):
    """A quarantine moves no input epoch, but the summary it takes out of recall is one the
    read returned: recall reads again and falls back to raw memory."""
    before = recall(garden.store, T, S, query="garden", k=3, reranker=_reranker(server))
    assert before.mode == "summary"
    artifact = before.record.alias.artifact_id
    other = lossgate.open(store_url)
    _while_reranking(server, lambda: other.admin.quarantine(T, S, artifact, reason="bad summary"))
    try:
        result = recall(garden.store, T, S, query="garden", k=3, reranker=_reranker(server, timeout_s=10.0))
    finally:
        other.close()
    assert result.record.filters["rerank"] == "used: scripted"
    assert result.mode == "raw_fallback" and result.summary is None
    verdict = garden.verify_recall(T, S, result.record.recall_id)
    assert verdict.state == "unchanged" and verdict.rendered_matches
