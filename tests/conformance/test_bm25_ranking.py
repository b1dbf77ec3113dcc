"""Both engines rank a query's events by BM25 with the subject's own statistics, on every store.

SQLite reads each term's weight in an event from FTS5's ``bm25()`` and weighs the term by the
subject's document frequency; PostgreSQL computes the same formula over each term's matches
(``lossgate.store.core.bm25.bm25_order``), because ``ts_rank`` knows no document frequency:
there, an event saying a common word twice outranked the only event with the rare word a
question asks about. On neither do other subjects' or tenants' document frequencies or event lengths decide
how a subject's events rank: an event's length is weighed against the mean length of the
subject's events the query matched, on both.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lossgate import NewEvent, NewFact
from lossgate.store.core.bm25 import bm25_order

T, S = "acme", "u-bm25"
AT = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)


def _append(memory, texts: dict[str, str]) -> None:
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id=eid, text=text, occurred_at=AT + timedelta(minutes=i))
            for i, (eid, text) in enumerate(texts.items())
        ]
    )


def _search(memory, query: str, limit: int = 10) -> list[str]:
    with memory.store.write() as tx:
        tx.refresh_search_index()
    with memory.store.read() as tx:
        return tx.search_events(T, S, query, limit=limit)


def test_a_rare_word_outranks_a_common_one_said_twice(memory):
    texts = {f"r{i}": f"refund refund request number {i} is pending" for i in range(30)}
    texts["trip"] = "we flew to lisbon last spring with the kids and it rained every single day"
    _append(memory, texts)
    assert _search(memory, "refund lisbon")[0] == "trip"


def test_of_two_events_with_the_word_once_the_shorter_ranks_first(memory):
    _append(
        memory,
        {
            "long": "the parcel arrived late in the afternoon after the courier had called twice about the gate code",
            "short": "the parcel arrived",
            **{f"c{i}": f"chatter about the weather {i}" for i in range(10)},
        },
    )
    assert _search(memory, "parcel")[:2] == ["short", "long"]


def test_saying_a_word_more_often_ranks_higher(memory):
    _append(
        memory,
        {
            "once": "budget review for the quarter is done",
            "thrice": "budget budget budget review for the quarter",
            "rare": "the quarterly offsite is in porto this year",
            **{f"c{i}": f"budget line {i} approved by finance" for i in range(8)},
        },
    )
    found = _search(memory, "budget porto", limit=20)
    assert found[0] == "rare"  # one rare word outweighs a common one said three times
    assert found.index("thrice") < found.index("once")


def test_bm25_order_matches_its_formula():
    # two terms over a subject of 100 events: "a" in three events, "b" in one
    stats = [[(90, 1, 10), (50, 2, 10), (10, 1, 40)], [(50, 1, 10)]]
    order = bm25_order(stats, newest=100)
    assert order[0] == 50  # both terms, and the rare one
    assert order.index(90) < order.index(10)  # same tf, the shorter first
    assert bm25_order([[], []], newest=100) == []


def test_revoked_events_not_yet_indexed_never_weigh_in_the_ranking(memory):
    _append(memory, {"old": "alpha filler", "new": "beta filler", **{f"p{i}": f"padding words {i}" for i in range(20)}})
    before = _search(memory, "alpha beta")
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id=f"x{i}",
                text="beta home address 12 Elm",
                occurred_at=AT + timedelta(hours=1, minutes=i),
            )
            for i in range(6)
        ]
    )
    for i in range(6):
        memory.revoke_event(T, S, f"x{i}")
    with memory.store.read() as tx:  # searched before any refresh: the revoked ones are past the index mark
        assert tx.search_events(T, S, "alpha beta", limit=10) == before
    # once indexed they are never returned (FTS5's statistics, file-wide, still count them on SQLite)
    assert not {f"x{i}" for i in range(6)} & set(_search(memory, "alpha beta"))


def _other_history(memory, tenant: str, subject: str, word: str, n: int) -> None:
    memory.append(
        [
            NewEvent(
                tenant_id=tenant,
                subject_id=subject,
                event_id=f"{subject}-{i}",
                text=f"{word} was mentioned again in note {i}",
                occurred_at=AT + timedelta(minutes=i),
            )
            for i in range(n)
        ]
    )


def test_a_subjects_ranking_is_its_own_whatever_other_histories_hold(memory):
    # In this subject "alpha" is the rare word (one event) and "beta" the common one (three).
    _append(
        memory,
        {
            "a1": "alpha came up once in the meeting",
            "b1": "beta came up in the meeting",
            "b2": "beta again in the review",
            "b3": "beta once more at lunch",
            **{f"c{i}": f"unrelated chatter number {i}" for i in range(12)},
        },
    )
    alone = _search(memory, "alpha beta")
    assert alone[0] == "a1"
    # another subject of this tenant, and another tenant, say "alpha" in every event: in a
    # shared index "alpha" is now the common word, but not in this subject
    _other_history(memory, T, "someone-else", "alpha", 60)
    _other_history(memory, "other-tenant", "u-other", "alpha", 60)
    assert _search(memory, "alpha beta") == alone


def test_a_word_rare_in_the_subject_stays_rare_whatever_another_tenant_says(memory):
    _append(
        memory,
        {
            "short": "invoice sent",
            "long": "the invoice was sent to the customer after the call with finance on friday",
            **{f"c{i}": f"invoice line {i} checked" for i in range(6)},
            "pay": "payment received",
        },
    )
    alone = _search(memory, "invoice payment")
    assert alone[0] == "pay"
    _other_history(memory, "other-tenant", "u-other", "payment", 200)
    assert _search(memory, "invoice payment") == alone


def test_how_long_other_histories_events_are_never_reorders_a_subject(memory):
    # Of two events saying "budget", the short one saying it once outranks the long one
    # saying it twice against this subject's mean length; weighed against a file's mean
    # that another tenant's long notes raise, the long one would win.
    filler = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec"
    _append(memory, {"long": f"budget budget {filler} romeo", "short": "budget plan approved", "c": "unrelated"})
    alone = _search(memory, "budget")
    assert alone == ["short", "long"]
    memory.append(
        [
            NewEvent(tenant_id="other-tenant", subject_id="u-other", event_id=f"n{i}", text=f"{filler} {i} " * 12)
            for i in range(200)
        ]
    )
    assert _search(memory, "budget") == alone


def test_events_not_yet_indexed_are_ranked_with_the_indexed_ones(memory):
    texts = {f"r{i}": f"refund budget talked morning item {i}" for i in range(300)}
    texts["rare"] = "refund budget talked morning item zanzibar"
    _append(memory, texts)
    with memory.store.write() as tx:
        tx.refresh_search_index()
    memory.append(  # under the backlog at which recall refreshes the index: matched on their text
        [
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id=f"f{j}",
                text=f"refund status update {j}",
                occurred_at=AT.replace(day=20),
            )
            for j in range(60)
        ]
    )
    with memory.store.read() as tx:
        # the one event holding the rare word first, not every fresh one holding the common word
        assert tx.search_events(T, S, "refund zanzibar", limit=20)[0] == "rare"
        assert tx.search_events(T, S, "status zanzibar", limit=5)[0] == "rare"
        fresh_first = tx.search_events(T, S, "update", limit=5)
    assert fresh_first[0] == "f59"  # a word only fresh events hold: they are found, newest first


def test_an_older_fresh_event_with_the_rare_word_is_not_crowded_out(memory):
    _append(memory, {f"m{i}": f"the meeting notes number {i}" for i in range(20)})
    with memory.store.write() as tx:
        tx.refresh_search_index()
    memory.append(  # not yet indexed: the rare word first, then forty newer with the common one
        [NewEvent(tenant_id=T, subject_id=S, event_id="zz", text="the meeting moved to zanzibar office")]
        + [NewEvent(tenant_id=T, subject_id=S, event_id=f"n{j}", text=f"meeting moved again {j}") for j in range(40)]
    )
    with memory.store.read() as tx:
        assert tx.search_events(T, S, "meeting zanzibar", limit=5)[0] == "zz"


def test_how_many_and_how_long_another_tenants_facts_are_never_reorders_a_subjects_facts(memory):
    _append(memory, {"src": "my addresses"})
    # one long fact saying it twice, one short saying it once: weighed against a file's mean
    # length that another tenant's long facts raise, the long one would move up
    filler = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec"
    topics = [f"street street {filler} romeo", "street corner shop"]
    memory.assert_facts(
        [NewFact(tenant_id=T, subject_id=S, predicate="chat.topic", value=v, source_event_ids=("src",)) for v in topics]
    )
    with memory.store.read() as tx:
        alone = tx.search_facts(T, S, "street", limit=5)
    assert len(alone) == 2
    for j in range(40):
        memory.append([NewEvent(tenant_id="other-tenant", subject_id=f"o{j}", event_id=f"o{j}", text="where I live")])
        memory.assert_facts(
            [
                NewFact(
                    tenant_id="other-tenant",
                    subject_id=f"o{j}",
                    predicate="chat.topic",
                    value="street street " + "filler " * 200,
                    source_event_ids=(f"o{j}",),
                )
            ]
        )
    with memory.store.read() as tx:
        assert tx.search_facts(T, S, "street", limit=5) == alone
