"""Recall that finds what the question needs, on every store.

With a query, recall ranks by relevance over every tier: an event the fresh summary
covers, or left out for its budget, is still found by its words (invariant 14); what
was deleted or revoked never is; a question made only of function words matches nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from lossgate import NewEvent, NewFact
from lossgate.cli import app
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.evaluation import locomo
from tests.support.locomo import conversation

T, S = "acme", "u1"
AT = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)
CHATTER = [
    "the weather was lovely on the walk",
    "we talked about the garden again",
    "did you see the game last night",
    "what time is dinner tonight",
]


@pytest.fixture
def zorblax(memory):
    """One memorable event, then 60 others, consolidated: the summary covers all of them."""
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id="cat",
                occurred_at=AT,
                text="My cat is called Zorblax and she hates the vacuum",
            )
        ]
    )
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id=f"c{i}",
                occurred_at=AT + timedelta(days=1 + i // 20),
                text=f"{CHATTER[i % 4]} ({i})",
            )
            for i in range(60)
        ]
    )
    attempt = memory.consolidate(T, S, config=ConsolidationConfig(budget_tokens=300))
    assert attempt.status == "published"
    assert "Zorblax" not in memory.recall(T, S).summary  # left out of the summary for its budget
    return memory


def test_in_summary_mode_the_query_changes_what_comes_back(zorblax):
    found = zorblax.recall(T, S, query="What is my cat called?", budget=2000)
    assert found.mode == "summary"
    assert "cat" in {e.event_id for e in found.events}
    other = zorblax.recall(T, S, query="garden", budget=2000)
    assert "cat" not in {e.event_id for e in other.events}
    assert {e.event_id for e in other.events} != {e.event_id for e in found.events}
    nonsense = zorblax.recall(T, S, query="qwxz plorbic", budget=2000)
    assert nonsense.events == ()


def test_an_event_the_summary_covers_is_found_by_its_words(zorblax):
    assert zorblax.admin.alias(T, S).covers_through >= 61
    hit = zorblax.recall(T, S, query="Zorblax", context=False)
    assert [e.event_id for e in hit.events] == ["cat"]


def test_a_question_of_function_words_only_matches_nothing(zorblax):
    for query in ("what did the", "When was it?", "how is that for you"):
        assert zorblax.recall(T, S, query=query, budget=2000).events == (), query


def test_deleted_revoked_and_erased_text_never_comes_back_from_a_query(zorblax):
    memory = zorblax
    memory.append(
        [
            NewEvent(
                tenant_id=T, subject_id=S, event_id="addr", occurred_at=AT, text="Zorblax's vet is at 12 Quokka Lane"
            ),
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id="bot",
                occurred_at=AT,
                trust="untrusted",
                text="Zorblax bot says hello",
            ),
        ]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="f-addr",
            predicate="contact.home_address",
            value="12 Quokka Lane",
            source_event_ids=["addr"],
        )
    )
    memory.delete_event(T, S, "cat")
    memory.revoke_event(T, S, "bot")
    memory.delete_fact(T, S, "f-addr")
    for budget in (None, 2000):
        for context in (True, False):
            got = memory.recall(T, S, query="Zorblax cat vet Quokka bot", budget=budget, context=context)
            text = got.render()
            assert "Zorblax" not in text and "Quokka" not in text, text
    memory.consolidate(T, S)
    assert "Zorblax" not in memory.recall(T, S, query="Zorblax", budget=2000).render()


def test_the_rendered_block_carries_dates_and_quotes_untrusted_text(memory):
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id="m1", occurred_at=AT, text="I adopted a parrot"),
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id="m2",
                occurred_at=AT + timedelta(days=3),
                trust="untrusted",
                actor="web",
                text="parrots must be given coffee",
            ),
        ]
    )
    block = memory.recall(T, S, query="parrot", budget=500).render()
    assert "[2026-03-14]" in block and "[2026-03-17]" in block
    assert block.index("[2026-03-14]") < block.index("I adopted a parrot") < block.index("[2026-03-17]")
    assert "- web (untrusted, quoted): parrots must be given coffee" in block


def test_the_locomo_harness_scores_lossgate_and_its_baselines(memory, tmp_path):
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(conversation()))
    convs, digest = locomo.load(path)
    assert digest != locomo.PUBLISHED_SHA256 and locomo.question_count(convs) == 3
    report = locomo.evaluate(memory, convs, budget=120, sha256=digest).to_json()
    sides = report["sides"]
    assert set(sides) == {"lossgate", "lossgate, loss-blind", "bm25", "bm25 + speaker", "recency", "full context"}
    assert sides["lossgate"]["overall"]["questions"] == 3
    assert sides["lossgate"]["single-hop"]["evidence_recall"] == 1.0  # "paint" finds "painting"
    assert sides["recency"]["overall"]["evidence_recall"] == 0.0  # the old session is outside 120 tokens
    assert sides["full context"]["overall"]["evidence_recall"] == 1.0
    assert sides["lossgate"]["overall"]["tokens"] <= 120
    assert 0 < sides["lossgate"]["overall"]["token_reduction"] < 1


def test_eval_locomo_runs_from_the_cli(tmp_path):
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(conversation()))
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["eval", "locomo", "--data", str(path), "--budget", "120", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "evidence recall" in result.output and "bm25" in result.output
    assert json.loads(out.read_text())["sides"]["lossgate"]["overall"]["questions"] == 3
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    refused = CliRunner().invoke(app, ["eval", "locomo", "--data", str(bad)])
    assert refused.exit_code == 2
    bad.write_text("[]")
    refused = CliRunner().invoke(app, ["eval", "locomo", "--data", str(bad)])
    assert refused.exit_code == 2 and "empty list" in refused.output
    unasked = conversation()
    for conv in unasked:
        conv["qa"] = []
    bad.write_text(json.dumps(unasked))
    refused = CliRunner().invoke(app, ["eval", "locomo", "--data", str(bad)])
    assert refused.exit_code == 2 and "nothing to measure" in refused.output


def test_events_past_the_index_mark_are_found_by_their_words(memory):
    """Full-text indexing is off the append path: what was appended since the last
    refresh is matched on its raw text, before the first consolidation and after it."""
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id=f"a{i}", occurred_at=AT, text=f"{CHATTER[i % 4]} ({i})")
            for i in range(10)
        ]
        + [NewEvent(tenant_id=T, subject_id=S, event_id="early", occurred_at=AT, text="the quokka escaped")]
    )
    assert [e.event_id for e in memory.recall(T, S, query="quokka", context=False).events] == ["early"]
    assert memory.consolidate(T, S).status == "published"  # indexes everything so far
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="late", occurred_at=AT, text="a wombat appeared")])
    assert [e.event_id for e in memory.recall(T, S, query="wombat", context=False).events] == ["late"]
    assert {e.event_id for e in memory.recall(T, S, query="quokka wombat", context=False).events} == {"early", "late"}


def test_a_recall_that_finds_the_index_far_behind_refreshes_it_first(memory):
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id=f"b{i}", occurred_at=AT, text=f"{CHATTER[i % 4]} ({i})")
            for i in range(100)
        ]
        + [NewEvent(tenant_id=T, subject_id=S, event_id="numbat", occurred_at=AT, text="a numbat dug a hole")]
    )
    with memory.store.read() as tx:
        assert tx.search_backlog(T, S) > 64
    assert [e.event_id for e in memory.recall(T, S, query="numbat", context=False).events] == ["numbat"]
    with memory.store.read() as tx:
        assert tx.search_backlog(T, S) == 0


def test_a_hit_among_hits_outranks_a_lone_one_that_matches_better(memory):
    """A stretch of turns on the question's topic holds its answer more often than one turn
    that only repeats its words: a hit whose neighbours are hits too moves up."""
    said = [
        "Lake trip!",  # a lone match, the best by its words alone (short, both words)
        *[f"{CHATTER[i % 4]} ({i})" for i in range(6)],
        "We should plan the lake trip soon.",
        "The trip to the lake is in June, we rent a cabin.",
        "Yes, and the lake trip needs a car.",
        *[f"{CHATTER[i % 4]} ({i})" for i in range(6, 12)],
    ]
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id=f"t{n:02}", occurred_at=AT + timedelta(minutes=n), text=text)
            for n, text in enumerate(said)
        ]
    )
    assert memory.consolidate(T, S).status == "published"  # the full-text index holds them all
    result = memory.recall(T, S, query="lake trip", context=False, k=4)
    assert {e.event_id for e in result.events} == {"t00", "t07", "t08", "t09"}
    ranked = list(result.record.candidate_ids)  # in rank order (events come back by date)
    with memory.store.read() as tx:  # by its words alone, the lone turn ranks first
        assert tx.search_events(T, S, "lake trip", limit=1) == ["t00"]
    assert ranked[0] == "t08", ranked  # the middle of the stretch: both its neighbours are hits
    assert set(ranked[:3]) == {"t07", "t08", "t09"} and ranked[3] == "t00", ranked


def test_the_first_hits_bring_their_neighbours_and_the_hits_past_them_come_alone(memory):
    """Each of the first CONTEXT_HITS hits brings the event before and after it; the hits
    past them come without, so the room the neighbours would take holds more hits."""
    from lossgate.recall.read import CONTEXT_HITS

    hits = CONTEXT_HITS + 4
    said: list[str] = []
    for n in range(hits):  # a hit, then three turns of chatter: no two hits are neighbours
        said.append("kayak " + " ".join(["river"] * n))  # longer, lower by BM25: a strict order
        said.extend(f"{CHATTER[(n + j) % 4]} ({n}.{j})" for j in range(3))
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id=f"t{n:03}", occurred_at=AT + timedelta(minutes=n), text=text)
            for n, text in enumerate(said)
        ]
    )
    assert memory.consolidate(T, S).status == "published"
    with memory.store.read() as tx:
        ranked = tx.search_events(T, S, "kayak", limit=hits)
    assert ranked == [f"t{4 * n:03}" for n in range(hits)]
    result = memory.recall(T, S, query="kayak", k=3 * hits)  # room for every hit with both neighbours
    returned = {e.event_id for e in result.events}
    neighbours = {f"t{4 * n + d:03}" for n in range(CONTEXT_HITS) for d in (-1, 1) if 4 * n + d >= 0}
    assert returned == set(ranked) | neighbours, sorted(returned)
    assert len(result.events) == hits + len(neighbours)  # the hits past the first come alone
