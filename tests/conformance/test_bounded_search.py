"""A word in every event costs a search what a rare word does: each term's newest matches
are read, at most a cap of them, and when a term has more the search ranks what it read
(a rare term's events first, then those holding more of the words, newest first). Run
with a cap of 8, so that a short history has words over it, on every store."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lossgate import NewEvent
from lossgate.store.core.bm25 import MAX_SEARCH_TERMS, TERM_CAP, bounded_order, cap_for, is_bounded
from lossgate.store.core.derived import CoreDerivedReads

T = "acme"
CAP = 8


@pytest.fixture
def capped(monkeypatch):
    monkeypatch.setattr(CoreDerivedReads, "term_cap", CAP)


def _subject(memory, texts, *, indexed=True):
    """A subject of ``texts``, taken into the full-text index (or left past it: matched on its text)."""
    subject = f"s-{uuid.uuid4().hex[:8]}"
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=subject, event_id=f"{subject}-{i}", text=text)
            for i, text in enumerate(texts)
        ]
    )
    if indexed:
        with memory.store.write() as tx:
            tx.lock_clock(T, subject)
            tx.refresh_search_index()
    return subject


def _hits(memory, subject, query, k):
    with memory.store.read() as tx:
        return [eid.rsplit("-", 1)[1] for eid in tx.search_events(T, subject, query, limit=k)]


@pytest.mark.parametrize("indexed", [True, False], ids=["indexed", "past the index"])
def test_a_rare_word_finds_all_its_events_first_however_old_among_a_common_word(memory, capped, indexed):
    texts = [f"refund budget review number {i}" for i in range(40)]
    for i in (1, 17, 33):  # the oldest is far older than the common word's newest matches
        texts[i] = f"refund to lisbon, number {i}"
    subject = _subject(memory, texts, indexed=indexed)
    hits = _hits(memory, subject, "lisbon refund", 6)
    assert hits[:3] == ["33", "17", "1"] and hits[3:] == ["39", "38", "37"]


def test_words_in_every_event_return_the_newest_events_holding_most_of_them(memory, capped):
    texts = [f"refund budget review number {i}" for i in range(40)]
    texts[36] = "refund only, number 36"
    subject = _subject(memory, texts)
    assert _hits(memory, subject, "refund budget", 4) == ["39", "38", "37", "35"]


def test_an_identifier_among_common_words_ranks_its_events_first(memory, capped):
    texts = [f"refund budget ref INV-{i % 7} number {i}" for i in range(60)]
    subject = _subject(memory, texts)
    hits = _hits(memory, subject, "inv-5 refund budget", 12)
    holding = sorted((str(i) for i in range(60) if i % 7 == 5), key=int, reverse=True)
    assert hits[: len(holding)] == holding
    recalled = memory.recall(T, subject, query="INV-5 refund budget", k=len(holding), context=False)
    assert {e.event_id.rsplit("-", 1)[1] for e in recalled.events} == set(holding)


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
# (No prefix that is a stop word: PostgreSQL's English dictionary indexes none, so "A-0" is
# searched as "0" there, and past the cap only the newest events saying "0" are read.)
@given(
    prefix=st.sampled_from(["INV", "PO", "TKT", "SHP"]),
    sep=st.sampled_from(["-", "/", ".", ":"]),
    numbers=st.lists(st.integers(0, 9), min_size=12, max_size=30),
    pick=st.integers(0, 29),
    indexed=st.booleans(),
)
def test_an_identifier_query_returns_the_events_holding_it_first_past_the_cap(
    memory, prefix, sep, numbers, pick, indexed
):
    before, CoreDerivedReads.term_cap = CoreDerivedReads.term_cap, CAP  # (hypothesis: no fixture per example)
    try:
        ids = [f"{prefix}{sep}{n}" for n in numbers]
        wanted = ids[pick % len(ids)]
        texts = [f"{prefix.lower()} note {i}: see {ident} about the refund" for i, ident in enumerate(ids)]
        texts += [f"{prefix} refund {n} {prefix} budget {n}" for n in numbers]  # its pieces, apart and often
        subject = _subject(memory, texts, indexed=indexed)
        holding = [str(i) for i, text in enumerate(texts) if wanted in text.split()]
        k = min(len(holding), CAP)
        found = memory.recall(T, subject, query=f"{wanted} refund", k=k, context=False).events
        assert {e.event_id.rsplit("-", 1)[1] for e in found} <= set(holding), (wanted, found)
        assert len(found) == k
    finally:
        CoreDerivedReads.term_cap = before


def test_a_history_under_the_cap_is_ranked_by_the_store_alone(memory, capped):
    subject = _subject(memory, ["refund refund refund", "refund once", "nothing here"])
    assert _hits(memory, subject, "refund", 5) == ["0", "1"]  # the store's ranking: term frequency counts


def test_deleted_and_revoked_events_stay_out_of_a_bounded_search(memory, capped):
    subject = _subject(memory, [f"refund budget number {i}" for i in range(30)])
    memory.revoke_event(T, subject, f"{subject}-29")
    assert _hits(memory, subject, "refund budget", 3) == ["28", "27", "26"]


def test_bounded_order_scores_rarer_terms_higher_and_breaks_ties_newest_first():
    common = list(range(100, 88, -1))  # read: 12 > cap 10, reaching back 12 of 100 positions
    rare = [5, 3]
    assert is_bounded([common, rare], 10) and not is_bounded([rare], 10)
    order = bounded_order([common, rare], 100, 10)
    assert order[:2] == [5, 3] and order[2:4] == [100, 99] and 90 not in order  # beyond the cap: not read
    assert bounded_order([[9, 8, 7], [8]], 100, 10)[0] == 8  # holding both words


def test_a_search_of_words_in_every_event_does_the_same_work_at_ten_times_the_history(memory, capped):
    if not memory.store.url.startswith("sqlite"):
        pytest.skip("counts SQLite's virtual-machine steps")
    steps = {}
    for n in (300, 3000):
        subject = _subject(memory, [f"refund budget review ref INV-{i % 7} number {i}" for i in range(n)])
        with memory.store.read() as tx:
            count = [0]
            tx._c.set_progress_handler(lambda: count.__setitem__(0, count[0] + 1), 10)  # noqa: B023 - called within this iteration
            try:
                for query in ("refund budget", "inv-5 refund", "review"):
                    tx.search_events(T, subject, query, limit=10)
            finally:
                tx._c.set_progress_handler(None, 10)
        steps[n] = count[0]
    assert steps[3000] < 1.5 * steps[300], steps


def test_a_long_query_shares_the_reads_among_its_terms():
    assert cap_for(3) == cap_for(8) == TERM_CAP
    assert cap_for(800) * 800 <= 8 * TERM_CAP + 800 * TERM_CAP // 16 and cap_for(16) == TERM_CAP // 2
    assert cap_for(2000, 8) == 1


def test_a_query_of_a_thousand_words_reads_its_first_terms_a_bounded_share_each(memory):
    subject = _subject(memory, [f"refund budget w{i} number {i}" for i in range(300)])
    words = " ".join(f"w{i}" for i in range(1000))  # each in one event: every one is rare
    # "refund" and the first 63 words are searched, 125 reads each: "refund" (in all 300) is
    # common, and the events holding it and one of those words come first, newest first
    assert cap_for(MAX_SEARCH_TERMS) == 125
    assert _hits(memory, subject, f"refund {words}", 5) == ["62", "61", "60", "59", "58"]
    # w999 is past the first 64 terms: not searched (else, newest, it would come first)
    assert _hits(memory, subject, f"{words} w999", 5) == ["63", "62", "61", "60", "59"]


def test_revoked_events_never_take_the_place_of_a_valid_one_past_the_cap(memory, capped):
    subject = _subject(memory, ["the zebra code is 4471"] + [f"zebra sighting {i}" for i in range(30)])
    for i in range(1, 31):
        memory.revoke_event(T, subject, f"{subject}-{i}")
    assert _hits(memory, subject, "zebra", 5) == ["0"]
    assert [e.event_id for e in memory.recall(T, subject, query="zebra", context=False).events] == [f"{subject}-0"]


def test_a_word_with_like_wildcards_matches_itself_before_it_is_indexed(memory):
    subject = _subject(memory, ["key a_1 here", "key ab1 there", "100% sure", "1000 sure"], indexed=False)
    assert _hits(memory, subject, "a_1", 5) == ["0"]
    assert _hits(memory, subject, "100%", 5) == ["2"]
