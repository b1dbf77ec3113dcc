"""Hybrid semantic search, on every store.

The embedder is a real HTTP client talking to a scripted ``/v1/embeddings`` server on
loopback whose "model" maps words to concepts (``tabby`` and ``feline`` share one), so
a query can match by meaning what it matches by no word. What must hold: vectors are
computed off the append path and only once; fusion keeps the lexical hits; deleted,
revoked and superseded items have no vectors and never come back, also when they are
deleted while their batch is being embedded; a failing embedder leaves recall lexical.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

import lossgate
from lossgate import NewEvent, NewFact
from lossgate.errors import ConfigError, EmbeddingError
from lossgate.ops.worker import drain, open_worker_memory
from lossgate.recall.read import recall
from lossgate.semantic import HttpEmbedder, HttpEmbedderConfig, embed_pending
from lossgate.testing.chat_server import Reply, ScriptedChatServer
from lossgate.testing.embeddings import concept_embeddings, concept_vector, embeddings_reply

T, S = "acme", "u1"
CHATTER = [
    "the weather was lovely on the walk",
    "we talked about the garden again",
    "did you see the game last night",
    "what time is dinner tonight",
]


@pytest.fixture
def server() -> Iterator[ScriptedChatServer]:
    with ScriptedChatServer(default=concept_embeddings) as srv:
        yield srv


@pytest.fixture
def embedder(server: ScriptedChatServer) -> Iterator[HttpEmbedder]:
    emb = HttpEmbedder(HttpEmbedderConfig(base_url=server.url, model="concepts", max_retries=0, timeout_s=5))
    yield emb
    emb.close()


@pytest.fixture
def pets(memory: lossgate.Memory, embedder: HttpEmbedder) -> lossgate.Memory:
    """A subject whose pet is named once, among 40 other turns; consolidated and embedded."""
    memory.embedder = embedder
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="pet", text="My tabby is called Zorblax")])
    memory.append(
        [NewEvent(tenant_id=T, subject_id=S, event_id=f"c{i}", text=f"{CHATTER[i % 4]} ({i})") for i in range(40)]
    )
    assert memory.consolidate(T, S).status == "published"
    assert memory.admin.embed(T, S).stored == 41
    return memory


def _vectors(memory: lossgate.Memory, kind: str = "event") -> set[str]:
    with memory.store.read() as tx:
        return {item for item, _ in tx.vectors(T, S, "concepts", kind)}  # type: ignore[arg-type]


def test_a_query_finds_by_meaning_what_no_word_of_it_matches(pets):
    lexical = recall(pets.store, T, S, query="my feline", context=False)
    assert "pet" not in {e.event_id for e in lexical.events}  # no word in common
    hybrid = pets.recall(T, S, query="my feline", context=False, budget=300)
    assert hybrid.mode == "summary"
    assert "pet" in {e.event_id for e in hybrid.events}
    assert hybrid.record.filters["semantic"] == "concepts"


def test_fusion_keeps_what_the_words_find(pets):
    hybrid = pets.recall(T, S, query="Zorblax", context=False, k=5)
    assert "pet" in {e.event_id for e in hybrid.events}  # a name has no meaning to embed, only words
    hybrid = pets.recall(T, S, query="garden", context=False, k=5)
    assert len(hybrid.events) == 5 and all("garden" in (e.text or "") for e in hybrid.events)


def test_a_vector_hit_that_says_the_query_in_other_words_comes_before_most_word_hits(memory, embedder):
    memory.embedder = embedder
    # turns on a walk between others (no two word hits side by side), then the kitten
    said = [f"{CHATTER[i % 2]} ({i})" for i in range(24)]
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id=f"w{i}", text=t) for i, t in enumerate(said)])
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="pet", text="A kitten, a kitten!")])
    assert memory.consolidate(T, S).status == "published" and memory.admin.embed(T, S).stored == 25
    # "walk" matches twelve turns; "feline" none, but the kitten is the query's other half
    lexical = recall(memory.store, T, S, query="feline walk", context=False, k=3)
    assert [e.event_id for e in lexical.events] != [] and "pet" not in {e.event_id for e in lexical.events}
    hybrid = memory.recall(T, S, query="feline walk", context=False, k=3)
    assert "pet" in {e.event_id for e in hybrid.events} and len(hybrid.events) == 3


def test_the_vectors_are_asked_again_from_what_the_first_hits_say(memory, embedder):
    # The kitten's turn also names the sea; the turn about the sea shares no word and no
    # meaning with "feline" (cosine 0: no vector hit), but it is near what the first hit says.
    memory.embedder = embedder
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="pet", text="kitten ocean")])
    memory.append(
        [NewEvent(tenant_id=T, subject_id=S, event_id=f"c{i}", text=f"{CHATTER[i % 4]} ({i})") for i in range(30)]
    )
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="sea", text="ocean beach coast")])
    assert memory.consolidate(T, S).status == "published" and memory.admin.embed(T, S).stored == 32
    assert sum(a * b for a, b in zip(concept_vector("feline"), concept_vector("ocean beach coast"), strict=True)) == 0
    lexical = recall(memory.store, T, S, query="feline", context=False, k=5)
    assert not {"pet", "sea"} & {e.event_id for e in lexical.events}
    hybrid = memory.recall(T, S, query="feline", context=False, k=5)
    assert {"pet", "sea"} <= {e.event_id for e in hybrid.events}


def test_vectors_are_computed_once_and_only_for_what_is_new(pets, server):
    calls = len(server.requests)
    assert pets.admin.embed(T, S).stored == 0
    assert len(server.requests) == calls  # nothing left to embed: no request at all
    pets.append([NewEvent(tenant_id=T, subject_id=S, event_id="new", text="a kitten arrived today")])
    assert _vectors(pets) == _vectors(pets) - {"new"}  # appending computes no vector
    assert pets.admin.embed(T, S).stored == 1
    assert server.requests[-1]["input"] == ["user: a kitten arrived today"]


def test_deleted_and_revoked_events_lose_their_vectors_and_never_come_back(pets):
    assert "pet" in {e.event_id for e in pets.recall(T, S, query="my feline").events}  # warms the vector cache
    pets.delete_event(T, S, "pet", reason="user asked")
    assert "pet" not in _vectors(pets)
    pets.revoke_event(T, S, "c1", reason="wrong")
    assert "c1" not in _vectors(pets)
    for query in ("my feline", "tabby Zorblax", "garden (1)"):
        for result in (pets.recall(T, S, query=query), pets.recall(T, S, query=query, budget=2000)):
            ids = {e.event_id for e in result.events}
            assert not ids & {"pet", "c1"}, query
            assert "Zorblax" not in result.render()
    assert pets.admin.embed(T, S).stored == 0  # and they are never embedded again


def test_facts_are_embedded_and_superseded_or_deleted_ones_lose_their_vectors(pets):
    pets.append([NewEvent(tenant_id=T, subject_id=S, event_id="topic", text="we chatted about puppies")])
    fact = pets.assert_fact(
        NewFact(
            tenant_id=T, subject_id=S, fact_id="t1", predicate="chat.topic", value="puppies", source_event_ids=["topic"]
        )
    )
    pets.admin.embed(T, S)
    assert _vectors(pets, "fact") == {"t1"}
    found = pets.recall(T, S, query="hound", k=3)
    assert "t1" in {f.fact_id for f in found.facts}  # by meaning: no word in common
    newer = pets.supersede(
        T,
        S,
        fact.fact_id,
        NewFact(
            tenant_id=T, subject_id=S, fact_id="t2", predicate="chat.topic", value="kittens", source_event_ids=["topic"]
        ),
    )
    assert _vectors(pets, "fact") == set()
    pets.admin.embed(T, S)
    assert _vectors(pets, "fact") == {newer.fact_id}
    pets.delete_fact(T, S, newer.fact_id, reason="forget it")
    assert _vectors(pets, "fact") == set()
    assert "topic" not in _vectors(pets)  # delete_fact deletes its source event too
    assert "puppies" not in pets.recall(T, S, query="hound puppies").render()


class _DeletingEmbedder:
    """Deletes an event while its batch is being embedded: the worst moment."""

    def __init__(self, inner: HttpEmbedder, memory: lossgate.Memory, victim: str) -> None:
        self.inner, self.memory, self.victim = inner, memory, victim
        self.model, self.max_chars = inner.model, inner.max_chars

    def embed(self, texts: Sequence[str]):  # type: ignore[no-untyped-def]
        vectors = self.inner.embed(texts)
        if self.victim:
            self.memory.delete_event(T, S, self.victim, reason="deleted mid-embedding")
            self.victim = ""
        return vectors


def test_an_event_deleted_while_being_embedded_gets_no_vector(memory, embedder):
    memory.append(
        [NewEvent(tenant_id=T, subject_id=S, event_id=f"e{i}", text=f"my tabby number {i}") for i in range(5)]
    )
    stored = embed_pending(memory.store, _DeletingEmbedder(embedder, memory, "e2"), T, S)
    assert stored.stored == 4
    assert _vectors(memory) == {"e0", "e1", "e3", "e4"}
    memory.embedder = embedder
    assert "e2" not in {e.event_id for e in memory.recall(T, S, query="feline").events}


def test_a_failing_embedder_leaves_recall_lexical_and_stores_nothing(pets, server, monkeypatch):
    from lossgate.recall import read as recall_module

    server.push(Reply(status=503, body={"error": {"message": "overloaded: cannot embed 'Zorblax'"}}))
    result = pets.recall(T, S, query="Zorblax", context=False)
    assert [e.event_id for e in result.events] == ["pet"]  # the words still find it
    assert result.record.filters["semantic"] == "unavailable: EmbeddingError (HTTP 503)"  # never the server's words
    calls = len(server.requests)
    again = pets.recall(T, S, query="my feline", context=False)  # within the cool-down: not asked again
    assert len(server.requests) == calls and again.record.filters["semantic"].startswith("unavailable")
    monkeypatch.setattr(recall_module, "_down_until", type(recall_module._down_until)())  # the cool-down is over
    assert "pet" in {e.event_id for e in pets.recall(T, S, query="my feline", context=False).events}
    pets.append([NewEvent(tenant_id=T, subject_id=S, event_id="later", text="another kitten")])
    server.push(Reply(status=500, body={"error": {"message": "boom"}}))
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        pets.admin.embed(T, S)
    assert "later" not in _vectors(pets)


def test_an_item_the_server_refuses_is_skipped_not_blocking_the_rest(memory, embedder, server):
    def picky(body):
        if any("x" * 50 in text for text in body["input"]):
            return Reply(status=413, body={"error": {"message": "input too long"}})
        return concept_embeddings(body)

    server._default = picky
    memory.append(
        [NewEvent(tenant_id=T, subject_id=S, event_id=f"k{i}", text=f"kitten {i}") for i in range(5)]
        + [NewEvent(tenant_id=T, subject_id=S, event_id="long", text="x" * 60)]
    )
    report = embed_pending(memory.store, embedder, T, S)
    assert report.stored == 5 and report.skipped == ["long"]
    assert _vectors(memory) == {f"k{i}" for i in range(5)}


def test_a_query_about_nothing_gets_no_semantic_hits(pets):
    result = pets.recall(T, S, query="xyzzyplugh", budget=2000)
    assert result.events == () and result.record.filters["semantic"] == "concepts"


def test_function_words_match_nothing_by_meaning_either(pets, server):
    calls = len(server.requests)
    for query in ("what did the", "When was it?"):
        assert pets.recall(T, S, query=query, budget=2000).events == (), query
    assert len(server.requests) == calls  # no content word: the query is not even embedded


def test_another_model_behind_the_same_name_falls_back_to_words_until_rebuilt(pets, server):
    def three_dims(body):
        return embeddings_reply([[1.0, 0.5, float(len(t) % 7)] for t in body["input"]])

    server._default = three_dims  # the server now runs a 3-dimensional "concepts"
    result = pets.recall(T, S, query="Zorblax", context=False)
    assert [e.event_id for e in result.events] == ["pet"]
    assert result.record.filters["semantic"].startswith("unavailable: stored vectors of another size")
    pets.append([NewEvent(tenant_id=T, subject_id=S, event_id="new", text="a kitten")])
    with pytest.raises(EmbeddingError, match="rebuild"):
        pets.admin.embed(T, S)  # never a mix of sizes under one model
    assert "new" not in _vectors(pets)
    report = pets.admin.embed(T, S, rebuild=True)
    assert report.dropped == 41 and report.stored == 42
    assert pets.recall(T, S, query="Zorblax").record.filters["semantic"] == "concepts"


def test_subjects_and_tenants_never_share_vectors(pets, embedder):
    pets.append([NewEvent(tenant_id=T, subject_id="u2", event_id="other", text="my feline friend Mittens")])
    pets.append([NewEvent(tenant_id="other-tenant", subject_id=S, event_id="x1", text="feline Mittens")])
    embed_pending(pets.store, embedder, T, "u2")
    embed_pending(pets.store, embedder, "other-tenant", S)
    for result in (pets.recall(T, S, query="feline Mittens", budget=2000),):
        assert not {e.event_id for e in result.events} & {"other", "x1"}
        assert "Mittens" not in result.render()


def test_a_worker_embeds_what_its_job_subject_gained(memory, embedder, store_url):
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id=f"w{i}", text=f"kitten news {i}") for i in range(3)])
    memory.request_consolidation(T, S)
    worker = open_worker_memory(store_url, migrate=False, embedder=embedder)
    try:
        assert drain(worker) == 1
    finally:
        worker.close()
    assert _vectors(memory) == {"w0", "w1", "w2"}


def test_embed_without_an_embedder_is_a_config_error(memory):
    with pytest.raises(ConfigError, match="no embedder"):
        memory.admin.embed(T, S)


def test_a_recall_sees_vectors_another_process_stored_after_its_last_recall(pets, embedder, store_url):
    assert "late" not in {e.event_id for e in pets.recall(T, S, query="canine").events}  # cached now
    pets.append([NewEvent(tenant_id=T, subject_id=S, event_id="late", text="a hound joined us")])
    other = lossgate.open(store_url, migrate=False, embedder=embedder)  # its own process, in effect
    try:
        assert other.admin.embed(T, S).stored == 1
    finally:
        other.close()
    assert "late" in {e.event_id for e in pets.recall(T, S, query="canine", context=False).events}
