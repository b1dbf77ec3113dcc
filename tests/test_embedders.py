"""The embedders and the ranking helpers of hybrid semantic search.

:class:`HttpEmbedder` is tested through a real HTTP exchange with a scripted server on
loopback: batching, order, credentials, retries, timeouts, and every malformed answer.
:class:`LocalEmbedder` loads all-MiniLM-L6-v2 from the installed package with the hub
switched off, and must put a sentence nearer its paraphrase than an unrelated one.
"""

from __future__ import annotations

import math
import os
import random

import pytest
from typer.testing import CliRunner

import lossgate
from lossgate import NewEvent
from lossgate.cli import app
from lossgate.errors import ConfigError, EmbeddingError
from lossgate.semantic import HttpEmbedder, HttpEmbedderConfig, embedder_from_env, fuse, nearest
from lossgate.semantic.ranking import VectorCache, VectorSet
from lossgate.testing.chat_server import Reply, ScriptedChatServer
from lossgate.testing.embeddings import concept_embeddings, concept_vector

np = pytest.importorskip("numpy")


def _embedder(server: ScriptedChatServer, **config) -> HttpEmbedder:
    return HttpEmbedder(HttpEmbedderConfig(base_url=server.url, model="m", backoff_s=0.01, **config))


def test_batches_keep_the_order_of_the_texts():
    texts = [f"text about cats number {i}" for i in range(5)]
    with ScriptedChatServer(default=concept_embeddings) as server:
        vectors = _embedder(server, batch_size=2).embed(texts)
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]
    assert server.requests[0]["model"] == "m"
    for row, text in zip(vectors, texts, strict=False):
        assert np.allclose(row, concept_vector(text), atol=1e-6)


def test_answers_out_of_order_are_put_back_by_index_and_normalised():
    body = {"data": [{"index": 1, "embedding": [0.0, 2.0]}, {"index": 0, "embedding": [3.0, 4.0]}]}
    with ScriptedChatServer([Reply(body=body)]) as server:
        vectors = _embedder(server).embed(["a", "b"])
    assert np.allclose(vectors, [[0.6, 0.8], [0.0, 1.0]])


def test_the_key_is_sent_and_never_shown_and_long_texts_are_cut():
    with ScriptedChatServer(
        [Reply(status=401, body={"error": {"message": "bad key"}})], default=concept_embeddings
    ) as server:
        embedder = _embedder(server, api_key="sk-secret", max_chars=5)
        with pytest.raises(EmbeddingError) as failure:
            embedder.embed(["hello world"])
        assert "sk-secret" not in str(failure.value) and "HTTP 401" in str(failure.value)
        embedder.embed(["hello world"])
    assert server.headers[-1]["authorization"] == "Bearer sk-secret"
    assert server.requests[-1]["input"] == ["hello"]


def test_server_errors_are_retried_and_then_reported():
    with ScriptedChatServer(
        [Reply(status=503), Reply(status=429, headers={"Retry-After": "0"})], default=concept_embeddings
    ) as server:
        assert _embedder(server, max_retries=2).embed(["cat"]).shape == (1, 64)
    with ScriptedChatServer(default=Reply(status=502, body={"error": {"message": "down"}})) as server:
        with pytest.raises(EmbeddingError, match="HTTP 502.*down"):
            _embedder(server, max_retries=1).embed(["cat"])
        assert len(server.requests) == 2


def test_a_slow_server_times_out():
    with ScriptedChatServer(default=Reply(delay_s=1.0, body={"data": []})) as server:
        with pytest.raises(EmbeddingError, match="timeout"):
            _embedder(server, timeout_s=0.2, max_retries=0).embed(["cat"])


@pytest.mark.parametrize(
    "body, problem",
    [
        ({"object": "list"}, "missing field data"),
        ({"data": [{"embedding": [1.0]}]}, "1 vectors for 2 texts"),
        ({"data": [{"embedding": [1.0, 0.0]}, {"embedding": [1.0]}]}, "different lengths"),
        ({"data": [{"embedding": [1.0, "x"]}, {"embedding": [1.0, 0.0]}]}, "other than numbers"),
        ({"data": [{"embedding": [0.0, 0.0]}, {"embedding": [1.0, 0.0]}]}, "all zeros"),
        ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]}, "out of place"),
        ({"data": [{"embedding": None}, {"embedding": [1.0]}]}, "not a list"),
        ("not json at all", "not JSON"),
        ([1, 2], "not a JSON object"),
    ],
)
def test_a_malformed_answer_is_an_embedding_error(body, problem):
    reply = Reply(body=body) if not isinstance(body, list) else Reply(body="[1, 2]")
    with ScriptedChatServer([reply]) as server:
        with pytest.raises(EmbeddingError, match=problem):
            _embedder(server, max_retries=0).embed(["a", "b"])


def test_a_question_gets_one_short_try():
    with ScriptedChatServer(default=Reply(delay_s=1.0, body={"data": []})) as server:
        embedder = _embedder(server, query_timeout_s=0.2, max_retries=3)
        with pytest.raises(EmbeddingError, match="timeout"):
            embedder.embed_query("cat")
        assert len(server.requests) == 1  # no retry on recall's path


def test_huge_components_do_not_overflow_into_a_zero_vector():
    body = {"data": [{"embedding": [1e200, 1e200]}, {"embedding": [3.0, 4.0]}]}
    with ScriptedChatServer([Reply(body=body)]) as server:
        vectors = _embedder(server).embed(["a", "b"])
    assert np.allclose(vectors, [[2**-0.5, 2**-0.5], [0.6, 0.8]])


def test_the_environment_names_the_embedder(monkeypatch):
    monkeypatch.delenv("LOSSGATE_EMBEDDER", raising=False)
    assert embedder_from_env(os.environ) is None
    monkeypatch.setenv("LOSSGATE_EMBEDDER", "ftp://example")
    with pytest.raises(ConfigError, match="'local' or an http"):
        embedder_from_env(os.environ)
    monkeypatch.setenv("LOSSGATE_EMBEDDER", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("LOSSGATE_EMBEDDER_MODEL", raising=False)
    with pytest.raises(ConfigError, match="LOSSGATE_EMBEDDER_MODEL"):
        embedder_from_env(os.environ)
    monkeypatch.setenv("LOSSGATE_EMBEDDER_MODEL", "nomic-embed-text")
    monkeypatch.setenv("LOSSGATE_EMBEDDER_BATCH_SIZE", "8")
    monkeypatch.setenv("LOSSGATE_EMBEDDER_MAX_CHARS", "1500")
    embedder = embedder_from_env(os.environ)
    assert embedder.model == "nomic-embed-text"
    assert (embedder.config.batch_size, embedder.config.max_chars) == (8, 1500)
    monkeypatch.setenv("LOSSGATE_EMBEDDER_BATCH_SIZE", "lots")
    with pytest.raises(ConfigError, match="batch_size"):
        embedder_from_env(os.environ)
    monkeypatch.delenv("LOSSGATE_EMBEDDER_BATCH_SIZE")
    monkeypatch.setenv("LOSSGATE_EMBEDDER", "http://[::1")
    with pytest.raises(ConfigError, match="base_url"):
        embedder_from_env(os.environ)


def test_nearest_is_the_exact_top_k_by_cosine():
    rng = random.Random(7)
    rows = []
    for i in range(200):
        v = [rng.gauss(0, 1) for _ in range(16)]
        n = math.sqrt(sum(x * x for x in v))
        rows.append((f"i{i}", np.array([x / n for x in v], dtype="<f4")))
    query = rows[3][1]
    expected = sorted(rows, key=lambda r: -float(r[1] @ query))[:10]
    stored = VectorSet([(i, v.tobytes()) for i, v in rows])
    assert nearest(stored, query, 10) == [i for i, _ in expected]
    assert nearest(VectorSet([]), query, 10) == [] and nearest(stored, query, 0) == []


def test_the_vector_cache_reloads_on_a_new_version_and_evicts_by_size():
    one = VectorSet([("a", np.ones(4, dtype="<f4").tobytes())])
    loads = []

    def load(name: str):
        def run():
            loads.append(name)
            return one

        return run

    cache = VectorCache(max_bytes=2 * one.nbytes)
    cache.get(("t", "s", "m", "event"), 1, load("first"))
    cache.get(("t", "s", "m", "event"), 1, load("again"))
    assert loads == ["first"]
    cache.get(("t", "s", "m", "event"), 2, load("new version"))
    assert loads == ["first", "new version"]
    cache.get(("t", "s2", "m", "event"), 1, load("s2"))
    cache.get(("t", "s3", "m", "event"), 1, load("s3"))  # over the size: the least recent goes
    cache.get(("t", "s", "m", "event"), 2, load("evicted"))
    assert loads[-1] == "evicted"


def test_weighted_rank_fusion():
    assert fuse(["a", "b", "c"], ["c", "b", "d"]) == ["c", "b", "a", "d"]  # 1/63 + 1/61 > 2/62
    # at a third of the weight, the vector ranking reorders agreed hits and appends the rest
    assert fuse(["a", "b", "c"], ["c", "d"], weights=(1.0, 0.3)) == ["c", "a", "b", "d"]
    with pytest.raises(ValueError):
        fuse(["a"], ["b"], weights=(1.0,))


def test_the_cli_embeds_with_the_embedder_the_environment_names(tmp_path, monkeypatch):
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    with lossgate.open(db) as memory:
        memory.append([NewEvent(tenant_id="t", subject_id="s", event_id="e1", text="my tabby sleeps")])
    runner = CliRunner()
    monkeypatch.delenv("LOSSGATE_EMBEDDER", raising=False)
    missing = runner.invoke(app, ["--db", db, "embed", "--tenant", "t", "--subject", "s"])
    assert missing.exit_code == 2 and "no embedder" in missing.output
    with ScriptedChatServer(default=concept_embeddings) as server:
        monkeypatch.setenv("LOSSGATE_EMBEDDER", server.url)
        monkeypatch.setenv("LOSSGATE_EMBEDDER_MODEL", "concepts")
        done = runner.invoke(app, ["--db", db, "embed", "--tenant", "t", "--subject", "s"])
        assert done.exit_code == 0, done.output
        assert "1 vectors stored" in done.output
        found = runner.invoke(app, ["--db", db, "recall", "--tenant", "t", "--subject", "s", "-q", "feline", "--json"])
        assert found.exit_code == 0 and "my tabby sleeps" in found.output
    monkeypatch.setenv("LOSSGATE_EMBEDDER", "nonsense")
    bad = runner.invoke(app, ["--db", db, "recall", "--tenant", "t", "--subject", "s", "-q", "feline"])
    assert bad.exit_code == 2 and "LOSSGATE_EMBEDDER" in bad.output
    monkeypatch.setenv("LOSSGATE_EMBEDDER", "http://[::1")
    bad = runner.invoke(app, ["--db", db, "embed", "--tenant", "t", "--subject", "s", "--rebuild"])
    assert bad.exit_code == 2 and "base_url" in bad.output and "Traceback" not in bad.output


@pytest.mark.slow
def test_the_local_model_loads_offline_and_ranks_by_meaning(tmp_path, monkeypatch):
    pytest.importorskip("sentence_transformers", reason="the [semantic] extra is not installed")
    from lossgate.semantic import LocalEmbedder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a download attempt would fail, not hang
    embedder = LocalEmbedder()
    assert embedder.model == "sentence-transformers/all-MiniLM-L6-v2"
    cat, kitten, tax = embedder.embed(
        ["My cat sleeps on the sofa", "The kitten naps on the couch", "Quarterly tax filing deadline"]
    )
    assert cat.shape == (384,) and abs(float(np.linalg.norm(cat)) - 1) < 1e-5
    assert float(cat @ kitten) > float(cat @ tax) + 0.2
    with lossgate.open(f"sqlite:///{tmp_path / 'local.db'}", embedder=embedder) as memory:
        memory.append(
            [
                NewEvent(tenant_id="t", subject_id="s", event_id=f"e{i}", text=text)
                for i, text in enumerate(
                    ["My cat sleeps on the sofa all day", "The invoice is due on Friday", "We went hiking in the hills"]
                )
            ]
        )
        assert memory.admin.embed("t", "s").stored == 3
        hit = memory.recall("t", "s", query="Which feline naps?", k=1, context=False)
        assert [e.event_id for e in hit.events] == ["e0"]
