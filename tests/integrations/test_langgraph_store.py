"""lossgate as a LangGraph store (lossgate.integrations.langgraph), against the real library:
a compiled graph whose nodes write and search long-term memory, and every store operation
checked behind the API, in lossgate's own records."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, PutOp

import lossgate
from lossgate import InvalidInput
from lossgate.integrations.langgraph import LossgateStore
from tests.support.stores import store_database

T, S = "travel-co", "user-17"
NS = (T, S, "memories")


@pytest.fixture
def store(memory: lossgate.Memory) -> LossgateStore:
    return LossgateStore(memory)


class Turn(TypedDict, total=False):
    message: str
    question: str
    answer: str


def remember_node(state: Turn, *, store: BaseStore) -> Turn:
    """Keeps what the user said about themselves (what an agent's memory node does)."""
    count = len(store.search(NS, limit=100))
    store.put(NS, f"note-{count + 1}", {"text": state["message"]})
    return {}


def answer_node(state: Turn, *, store: BaseStore) -> Turn:
    hits = store.search((T, S), query=state["question"], limit=1)
    return {"answer": hits[0].value["text"] if hits else "nothing remembered"}


def graph(store: LossgateStore):
    builder = StateGraph(Turn)
    builder.add_node("remember", remember_node)
    builder.add_node("answer", answer_node)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "answer")
    builder.add_edge("answer", END)
    return builder.compile(store=store)


def test_a_compiled_graph_keeps_and_searches_long_term_memory_in_lossgate(memory, store):
    app = graph(store)
    app.invoke({"message": "I always book an aisle seat on long flights.", "question": "window or aisle seat?"})
    out = app.invoke({"message": "My cat Miso hates the carrier.", "question": "what is my cat called?"})
    assert out["answer"] == "My cat Miso hates the carrier."
    out = app.invoke({"message": "I'm vegetarian these days.", "question": "which seat do I book?"})
    assert out["answer"] == "I always book an aisle seat on long flights."

    # behind the API: each note is an event of the subject's raw layer, found by recall
    events = memory.events(T, S)
    assert [e.text for e in events] == [
        "text: I always book an aisle seat on long flights.",
        "text: My cat Miso hates the carrier.",
        "text: I'm vegetarian these days.",
    ]
    assert {(e.kind, e.actor, e.trust) for e in events} == {("document", "agent", "tool")}
    assert events[1].payload == {
        "langgraph": {"namespace": ["memories"], "key": "note-2", "value": {"text": "My cat Miso hates the carrier."}}
    }
    assert any("Miso" in (e.text or "") for e in memory.recall(T, S, query="Miso").events)
    assert [i.key for i in store.search(NS)] == ["note-3", "note-2", "note-1"]  # newest first


def test_get_returns_the_newest_version_and_the_earlier_ones_stay_in_the_raw_layer(memory, store):
    assert store.get(NS, "home") is None
    store.put(NS, "home", {"city": "Lisbon", "since": 2019})
    first = store.get(NS, "home")
    store.put(NS, "home", {"city": "Porto", "since": 2024})
    item = store.get(NS, "home")
    assert item is not None and first is not None
    assert (item.namespace, item.key, item.value) == (NS, "home", {"city": "Porto", "since": 2024})
    assert item.created_at == first.created_at < item.updated_at
    assert [e.text for e in memory.events(T, S, states=["valid"])] == [
        "city: Lisbon\nsince: 2019",
        "city: Porto\nsince: 2024",
    ]
    # the earlier version's words do not find the item: it no longer says them
    assert store.search((T, S), query="Lisbon") == []
    assert [i.value["city"] for i in store.search((T, S), query="Porto")] == ["Porto"]


def test_delete_erases_every_version_for_real(memory, store, db_url):
    store.put(NS, "passport", {"number": "X9QZ-771-KESTREL"})
    store.put(NS, "passport", {"number": "Y4RT-202-KESTREL"})
    store.put(NS, "seat", {"text": "aisle"})
    assert [i.value for i in store.search((T, S), query="KESTREL")] == [{"number": "Y4RT-202-KESTREL"}]
    store.delete(NS, "passport")
    assert store.get(NS, "passport") is None
    deleted = memory.events(T, S, states=["deleted"])
    assert len(deleted) == 2 and all(e.text is None and e.payload is None for e in deleted)
    assert [e.text for e in memory.events(T, S, states=["valid"])] == ["text: aisle"]
    # the recall that found it was redacted with it; after compaction no byte of the file holds it
    memory.admin.compact()
    raw = Path(db_url.removeprefix("sqlite:///")).read_bytes()
    assert b"KESTREL" not in raw and b"aisle" in raw
    assert store.search((T, S), query="KESTREL") == []
    assert [e.text for e in memory.recall(T, S, query="KESTREL passport").events] == []
    store.delete(NS, "never-stored")  # a delete of nothing writes nothing
    assert memory.admin.clock(T, S).high_water == 3


def test_a_query_ranks_by_recall_within_the_prefix_with_filter_and_paging(memory, store):
    def apart(n: int) -> None:  # so that no item is ranked up for a neighbour that matches too
        memory.append(
            [lossgate.NewEvent(tenant_id=T, subject_id=S, event_id=f"between-{n}", text="the weather was lovely")]
        )

    memory.append([lossgate.NewEvent(tenant_id=T, subject_id=S, text="ramen again tonight?")])  # not an item
    apart(1)
    store.put((T, S, "food"), "likes", {"text": "loves spicy ramen and spicy curry", "stars": 5})
    apart(2)
    store.put((T, S, "food"), "dislikes", {"text": "finds ramen too salty at airports", "stars": 2})
    apart(3)
    store.put((T, S, "travel"), "ramen-trip", {"text": "a ramen tour of Fukuoka", "stars": 4})

    # recall ranks the full-text index by BM25; consolidation brings the index up to date
    assert memory.consolidate(T, S).status == "published"
    ranked = store.search((T, S), query="spicy ramen")
    assert [i.key for i in ranked] == ["likes", "ramen-trip", "dislikes"]  # both words, "spicy" twice
    assert all(i.score is None for i in ranked)
    assert {i.key for i in store.search((T, S, "food"), query="ramen")} == {"likes", "dislikes"}
    assert [i.key for i in store.search((T, S), query="ramen", filter={"stars": {"$gte": 4}})] in (
        ["likes", "ramen-trip"],
        ["ramen-trip", "likes"],
    )
    assert [i.key for i in store.search((T, S), query="ramen", filter={"stars": 2})] == ["dislikes"]
    whole = [i.key for i in store.search((T, S), query="ramen", limit=10)]
    assert [i.key for i in store.search((T, S), query="ramen", limit=1, offset=1)] == whole[1:2]
    assert store.search((T, S), query="the when did") == []  # only function words: nothing to match
    # an item put since the index was refreshed is found by its words, and ranked with the rest
    apart(4)
    store.put((T, S, "food"), "fresh", {"text": "ramen ramen ramen", "stars": 1})
    found = [i.key for i in store.search((T, S), query="spicy ramen")]
    assert found[0] == "likes" and sorted(found) == ["dislikes", "fresh", "likes", "ramen-trip"]
    # each search with a query is a recall, recorded as every recall is
    assert {r.query for r in memory.admin.recalls(T, S)} >= {"spicy ramen", "ramen"}


def test_an_item_put_with_index_fields_is_searched_by_those_fields_only(memory, store):
    store.put(NS, "a", {"title": "gardening tips", "body": "water the tomatoes"}, index=["title"])
    store.put(NS, "b", {"title": "secret", "body": "tomatoes again"}, index=False)
    assert [i.key for i in store.search((T, S), query="gardening")] == ["a"]
    assert store.search((T, S), query="tomatoes") == []
    assert store.get(NS, "b").value == {"title": "secret", "body": "tomatoes again"}
    indexed = LossgateStore(memory, index=["body"])
    indexed.put(NS, "c", {"title": "plain", "body": "courgettes"})
    assert [i.key for i in store.search((T, S), query="courgettes")] == ["c"]


def test_without_a_query_search_reads_a_tenants_subjects_and_lists_their_namespaces(memory, store):
    store.put((T, "user-1", "prefs"), "tz", {"tz": "UTC+01:00"})
    store.put((T, "user-2", "prefs"), "tz", {"tz": "UTC-05:00"})
    store.put((T, "user-2", "trips", "2026"), "lisbon", {"city": "Lisbon"})
    store.put(("other-co", "user-1", "prefs"), "tz", {"tz": "UTC+09:00"})
    assert [(i.namespace, i.value) for i in store.search((T,), filter={"tz": "UTC-05:00"})] == [
        ((T, "user-2", "prefs"), {"tz": "UTC-05:00"})
    ]
    assert {i.namespace[1] for i in store.search((T,))} == {"user-1", "user-2"}
    assert store.list_namespaces(prefix=(T,)) == [
        (T, "user-1", "prefs"),
        (T, "user-2", "prefs"),
        (T, "user-2", "trips", "2026"),
    ]
    assert store.list_namespaces(prefix=(T, "*", "prefs")) == [(T, "user-1", "prefs"), (T, "user-2", "prefs")]
    assert store.list_namespaces(prefix=(T, "user-2")) == [(T, "user-2", "prefs"), (T, "user-2", "trips", "2026")]
    assert store.list_namespaces(prefix=(T,), suffix=("2026",)) == [(T, "user-2", "trips", "2026")]
    assert store.list_namespaces(prefix=(T,), max_depth=3) == [
        (T, "user-1", "prefs"),
        (T, "user-2", "prefs"),
        (T, "user-2", "trips"),
    ]
    assert store.list_namespaces(prefix=(T,), limit=1, offset=1) == [(T, "user-2", "prefs")]
    store.delete((T, "user-2", "trips", "2026"), "lisbon")
    assert store.list_namespaces(prefix=(T, "user-2")) == [(T, "user-2", "prefs")]


def test_a_store_for_one_tenant_refuses_another_and_tenants_never_mix(memory):
    acme = LossgateStore(memory, tenant_id="acme")
    acme.put(("acme", "u1", "notes"), "k", {"text": "acme's note"})
    with pytest.raises(InvalidInput, match="serves tenant 'acme'"):
        acme.put(("globex", "u1", "notes"), "k", {"text": "elsewhere"})
    with pytest.raises(InvalidInput, match="serves tenant 'acme'"):
        acme.get(("globex", "u1", "notes"), "k")
    with pytest.raises(InvalidInput, match="serves tenant 'acme'"):
        acme.put(("*", "u1", "notes"), "k", {"text": "a label, not a wildcard"})
    assert acme.list_namespaces() == [("acme", "u1", "notes")]  # the store's tenant
    assert acme.list_namespaces(prefix=("*", "*", "notes")) == [("acme", "u1", "notes")]
    assert [i.key for i in acme.search(())] == ["k"]
    everyone = LossgateStore(memory)
    assert everyone.get(("globex", "u1", "notes"), "k") is None
    assert everyone.search(("globex",)) == []
    with pytest.raises(InvalidInput, match="name the tenant"):
        everyone.list_namespaces()


def test_bad_input_is_refused_with_a_typed_error_and_a_failed_batch_writes_nothing(memory, store):
    with pytest.raises(InvalidInput, match=r"\(tenant, subject, \.\.\.\)"):
        store.put((T,), "k", {"a": 1})
    with pytest.raises(InvalidInput, match="whitespace"):
        store.put((T, "user 17"), "k", {"a": 1})
    with pytest.raises(InvalidInput, match="JSON"):
        store.put(NS, "k", {"when": object()})
    with pytest.raises(InvalidInput, match=r"\$regex"):
        store.search((T, S), filter={"text": {"$regex": "a.*"}})
    with pytest.raises(InvalidInput, match="names the tenant and the subject"):
        store.search((T,), query="aisle")
    with pytest.raises(InvalidNamespaceError):  # LangGraph's own label rules come first
        store.put((T, "a.b"), "k", {"a": 1})
    with pytest.raises(InvalidInput, match="whitespace"):
        store.batch([PutOp(NS, "good", {"a": 1}), PutOp((T, "bad subject"), "k", {"a": 2})])
    assert memory.events(T, S) == [] and store.batch([GetOp(NS, "good")]) == [None]


def test_a_second_store_on_the_same_database_sees_puts_and_deletes_at_once(memory, store, db_url):
    other_memory = lossgate.open(db_url)  # as another process would
    try:
        other = LossgateStore(other_memory)
        store.put(NS, "k", {"v": 1})
        assert other.get(NS, "k").value == {"v": 1}
        store.put(NS, "k", {"v": 2})
        assert other.get(NS, "k").value == {"v": 2}
        store.delete(NS, "k")
        assert other.get(NS, "k") is None
        other.put(NS, "k", {"v": 3})
        assert store.get(NS, "k").value == {"v": 3}
    finally:
        other_memory.close()


def test_the_async_api_runs_the_same_operations(memory, store):
    async def scenario() -> None:
        await store.aput(NS, "tz", {"text": "timezone is UTC+01:00 in winter"})
        assert (await store.aget(NS, "tz")).value == {"text": "timezone is UTC+01:00 in winter"}
        assert [i.key for i in await store.asearch((T, S), query="timezone winter")] == ["tz"]
        assert await store.alist_namespaces(prefix=(T,)) == [NS]
        await store.adelete(NS, "tz")
        assert await store.aget(NS, "tz") is None

    asyncio.run(scenario())
    assert [e.state for e in memory.events(T, S)] == ["deleted"]


@pytest.mark.postgres
def test_the_store_on_postgresql(tmp_path_factory, registry):
    with store_database("postgres", tmp_path_factory, "langgraph") as db_url:
        memory = lossgate.open(db_url)
        try:
            store = LossgateStore(memory)
            app = graph(store)
            app.invoke({"message": "Please never call me before 9am.", "question": "when may you call?"})
            out = app.invoke({"message": "My badge number is B-4471.", "question": "call me at 9am?"})
            assert out["answer"] == "Please never call me before 9am."
            assert [i.key for i in store.search(NS)] == ["note-2", "note-1"]
            store.delete(NS, "note-1")
            assert store.search((T, S), query="call 9am") == []
            assert [e.state for e in memory.events(T, S)] == ["deleted", "valid"]
        finally:
            memory.close()
