"""The response boundary's evidence on every store: what an agent answered or did after a
recall, tied to the recall and the guard result of its action; gone with the content it
rests on when that is deleted (from every row, and from the SQLite file once compacted);
recalls attested and verified (unchanged, changed, erased, the same after a restart); and
the diagnosis naming the response as the first divergence when the agent acted against a
refusal. Through the Python API and the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

import lossgate
from lossgate import NewEvent, NewFact
from lossgate.errors import InvalidInput, NotFound
from lossgate.lineage.responses import PURGED
from lossgate.ops.diagnose import diagnose, write_bundle
from tests.support.cli import one_line_error

T, S = "travel-co", "user-17"
AT = datetime(2026, 3, 14, 14, 32, tzinfo=UTC)
ANSWER = "Booked the green salad with the QZXPEANUT dressing for you"  # one token FTS or a grep can find
ORDER = {"restaurant": "Casa", "items": [{"dish": "green salad", "ingredients": ["lettuce", "peanut dressing"]}]}
FIXED = {"restaurant": "Casa", "items": [{"dish": "green salad", "ingredients": ["lettuce", "lemon dressing"]}]}


def remember(memory) -> None:
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id=e, text=text, occurred_at=AT)
            for e, text in (
                ("msg-41", "I am allergic to peanuts, not merely avoiding them."),
                ("msg-42", "Please keep my calendar on timezone UTC+01:00 from now on."),
                ("msg-43", "The garden looks lovely after the rain this morning."),
            )
        ]
    )
    memory.assert_facts(
        [
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="allergy-1",
                predicate="food.peanuts_allowed",
                value=False,
                qualifiers={"basis": "allergy", "severity": "critical"},
                source_event_ids=["msg-41"],
            ),
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="tz-1",
                predicate="timezone",
                value="UTC+01:00",
                source_event_ids=["msg-42"],
            ),
        ]
    )


# -- recording ---------------------------------------------------------------------------------


def test_a_response_is_stored_tied_to_its_recall_and_guard_result(memory) -> None:
    remember(memory)
    rid = memory.recall(T, S, query="dinner order").record.recall_id
    refused = memory.guard(T, S, ORDER, recall_id=rid)
    allowed = memory.guard(T, S, FIXED, recall_id=rid)
    said = memory.respond(T, S, rid, answer="I cannot order the peanut dressing.")
    done = memory.respond(T, S, rid, action=FIXED, guard_id=allowed.guard_id, answer="Ordered the lemon one.")
    assert (said.recall_id, said.guard_id, said.action, said.action_sha256) == (rid, None, None, None)
    assert said.answer_sha256 and said.answer_sha256.startswith("sha256:")
    # an action hashes as the guard hashed it: the same action, the same sha256
    assert done.action == FIXED and done.action_sha256 == allowed.action_sha256 != refused.action_sha256
    assert memory.admin.responses(T, S) == [done, said]  # newest first
    assert memory.admin.responses(T, S, limit=1) == [done]
    assert [g.guard_id for g in memory.admin.guard_results(T, S)] == [allowed.guard_id, refused.guard_id]
    again = lossgate.open(memory.store.url)  # read back the same by another memory
    try:
        assert again.admin.responses(T, S) == [done, said]
    finally:
        again.close()


def test_a_response_needs_its_recall_and_guard_result_of_the_subject_and_a_json_object(memory) -> None:
    remember(memory)
    memory.append([NewEvent(tenant_id=T, subject_id="other", event_id="o-1", text="hello", occurred_at=AT)])
    rid = memory.recall(T, S).record.recall_id
    theirs = memory.recall(T, "other").record.recall_id
    their_guard = memory.guard(T, "other", FIXED, recall_id=theirs).guard_id
    other_recall_guard = memory.guard(T, S, FIXED, recall_id=memory.recall(T, S).record.recall_id).guard_id
    with pytest.raises(NotFound, match="rc-nothing"):
        memory.respond(T, S, "rc-nothing", answer="hi")
    with pytest.raises(NotFound):
        memory.respond(T, S, theirs, answer="hi")  # another subject's recall
    with pytest.raises(NotFound):
        memory.respond(T, S, rid, answer="hi", guard_id=their_guard)
    with pytest.raises(NotFound):
        memory.respond(T, S, rid, answer="hi", guard_id="gd-nothing")
    with pytest.raises(InvalidInput, match="checked an action for recall"):
        memory.respond(T, S, rid, answer="hi", guard_id=other_recall_guard)
    with pytest.raises(InvalidInput, match="an answer, an action"):
        memory.respond(T, S, rid)
    with pytest.raises(InvalidInput, match="JSON object"):
        memory.respond(T, S, rid, action=["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="action"):
        memory.respond(T, S, rid, action={"deep": float("nan")})
    with pytest.raises(InvalidInput, match="answer"):
        memory.respond(T, S, rid, answer="nul \x00 inside")
    with pytest.raises(InvalidInput, match="limit"):
        memory.respond(T, S, rid, answer="x" * 70_000)
    assert memory.admin.responses(T, S) == []  # nothing half-written


# -- deletion ----------------------------------------------------------------------------------


def _rows_holding(url: str, word: str) -> list[str]:
    """The PostgreSQL tables with a row whose text holds ``word``, read as the owner."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()
        ]
        assert "responses" in tables and "guard_results" in tables
        return [
            t
            for t in tables
            if conn.execute(
                f'SELECT count(*) FROM "{t}" x WHERE lower(x::text) LIKE %s', (f"%{word.lower()}%",)
            ).fetchone()[0]
        ]


def test_deleting_the_event_behind_a_recall_erases_the_response_from_every_row_and_the_file(memory, store_url):
    remember(memory)
    rid = memory.recall(T, S).record.recall_id  # raw memory: every event, the allergy among them
    refused = memory.guard(T, S, ORDER, recall_id=rid)
    unrelated = memory.guard(T, S, {"note": "QZXUNRELATED"})  # tied to nothing deleted: it stays
    response = memory.respond(T, S, rid, answer=ANSWER, action=ORDER, guard_id=refused.guard_id)
    path = Path(store_url.removeprefix("sqlite:///"))

    def held() -> dict[str, int]:
        return {
            p.name: p.read_bytes().count(b"QZXPEANUT") for p in (path, path.with_name(path.name + "-wal")) if p.exists()
        }

    if store_url.startswith("sqlite"):
        memory.store._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert sum(held().values()) > 0  # the answer is in the file before the deletion
    memory.delete_event(T, S, "msg-43", reason="erasure request")  # the garden: not the allergy

    (gone,) = memory.admin.responses(T, S)
    assert (gone.answer, gone.action) == (None, None)
    assert (gone.answer_sha256, gone.action_sha256) == (response.answer_sha256, response.action_sha256)
    assert gone.redacted is not None and gone.redacted.cause == "delete_event msg-43"
    assert (gone.redacted.query_sha256, gone.redacted.query_chars) == (response.answer_sha256, len(ANSWER))
    guarded = {g.guard_id: g for g in memory.admin.guard_results(T, S)}
    g = guarded[refused.guard_id]
    assert g.action is None and g.action_sha256 == refused.action_sha256 and g.redacted is not None
    (r,) = g.refusals
    assert (r.rule, r.field, r.fact_id, r.source_event_ids) == (
        "meal-ingredients",
        "items[0].ingredients[1]",
        "allergy-1",
        ("msg-41",),
    )
    assert (r.value, r.fact_value, r.qualifiers, r.detail) == (None, None, {}, PURGED)
    assert guarded[unrelated.guard_id] == unrelated
    assert any(e.op == "redact_responses" for e in memory.admin.log(T, S))
    readable = json.dumps(
        [x.model_dump(mode="json") for x in [*memory.admin.responses(T, S), *memory.admin.guard_results(T, S)]]
    )
    assert "QZXPEANUT" not in readable and "peanut dressing" not in readable and "QZXUNRELATED" in readable

    if store_url.startswith("postgresql"):
        assert _rows_holding(store_url, "QZXPEANUT") == []
        return
    memory.admin.compact()
    assert sum(held().values()) == 0, held()


def test_deleting_the_fact_a_refusal_names_redacts_the_guard_result_and_the_response_built_on_it(memory):
    remember(memory)
    refused = memory.guard(T, S, ORDER)  # no recall named: found by its refusal's fact
    rid = memory.recall(T, S, query="timezone calendar").record.recall_id
    response = memory.respond(T, S, rid, answer="Sorry, the peanut dressing is out", guard_id=refused.guard_id)
    memory.delete_fact(T, S, "allergy-1", reason="erasure request")
    (g,) = memory.admin.guard_results(T, S)
    assert g.action is None and g.redacted is not None and g.redacted.cause == "delete_fact allergy-1"
    (gone,) = memory.admin.responses(T, S)
    assert gone.answer is None and gone.answer_sha256 == response.answer_sha256


def test_a_response_on_a_recall_whose_content_was_deleted_is_stored_redacted(memory):
    remember(memory)
    rid = memory.recall(T, S).record.recall_id  # no query: nothing of the record itself to redact
    memory.delete_event(T, S, "msg-43")
    late = memory.respond(T, S, rid, answer=ANSWER)
    assert late.answer is None and late.redacted is not None and late.answer_sha256
    assert memory.admin.responses(T, S) == [late]


# -- attestation -------------------------------------------------------------------------------


def _verdicts(memory, store_url: str, recall_ids: list[str]) -> list[tuple[str, tuple, bool | None]]:
    """Each recall's verdict from ``memory`` and from a memory opened afresh (a restart): the same."""
    here = [memory.verify_recall(T, S, rid) for rid in recall_ids]
    fresh = lossgate.open(store_url)
    try:
        assert [fresh.verify_recall(T, S, rid) for rid in recall_ids] == here
    finally:
        fresh.close()
    return [(v.state, v.changes, v.rendered_matches) for v in here]


def test_a_recall_is_unchanged_then_changed_then_erased_and_a_restart_says_the_same(memory, store_url):
    remember(memory)
    raw = memory.recall(T, S)
    assert raw.record.rendered_sha256 and raw.record.inputs is not None
    assert list(raw.record.inputs.facts) == ["allergy-1", "tz-1"]
    assert list(raw.record.inputs.events) == ["msg-41", "msg-42", "msg-43"]
    assert _verdicts(memory, store_url, [raw.record.recall_id]) == [("unchanged", (), True)]

    memory.supersede(
        T,
        S,
        "tz-1",
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="tz-2",
            predicate="timezone",
            value="UTC+02:00",
            source_event_ids=["msg-42"],
        ),
    )
    assert _verdicts(memory, store_url, [raw.record.recall_id]) == [("changed", (("tz-1", "superseded"),), None)]

    memory.delete_event(T, S, "msg-43", reason="erasure request")
    assert _verdicts(memory, store_url, [raw.record.recall_id]) == [
        ("erased", (("tz-1", "superseded"), ("msg-43", "deleted")), None)
    ]
    with pytest.raises(NotFound):
        memory.verify_recall(T, S, "rc-nothing")


def test_a_summary_recall_trimmed_by_a_budget_is_rebuilt_then_retired_by_a_newer_summary(memory, store_url):
    remember(memory)
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id=f"chat-{i}",
                occurred_at=AT,
                text=f"chat line {i} about the garden and the weather",
            )
            for i in range(30)
        ]
    )
    assert memory.consolidate(T, S).status == "published"
    tight = memory.recall(T, S, budget=150)
    assert tight.mode == "summary" and tight.record.inputs.summary_lines is not None  # a budget cut the summary
    searched = memory.recall(T, S, query="garden weather", budget=200)
    whole = memory.recall(T, S)
    assert whole.record.inputs.summary_lines is None and whole.record.inputs.artifact_id == whole.artifact_id
    ids = [r.record.recall_id for r in (tight, searched, whole)]
    assert _verdicts(memory, store_url, ids) == [("unchanged", (), True)] * 3

    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="late", text="thanks, that is all", occurred_at=AT)])
    assert _verdicts(memory, store_url, ids) == [("unchanged", (), True)] * 3  # an append changes nothing returned
    assert memory.consolidate(T, S).status == "published"
    assert _verdicts(memory, store_url, ids) == [("changed", ((whole.artifact_id, "retired"),), None)] * 3


def test_a_deletion_that_purges_the_summary_a_recall_read_erases_it(memory, store_url):
    remember(memory)
    assert memory.consolidate(T, S).status == "published"
    rid = memory.recall(T, S).record.recall_id
    memory.delete_event(T, S, "msg-42")  # the timezone's source: the fact goes, the summary is purged
    state, changes, _ = _verdicts(memory, store_url, [rid])[0]
    assert state == "erased" and ("tz-1", "deleted") in changes
    assert any(what == "deleted" and item.startswith("art-") for item, what in changes)


# -- the command line --------------------------------------------------------------------------


def test_the_cli_records_lists_and_verifies(cli, memory, tmp_path: Path) -> None:
    remember(memory)
    rid = memory.recall(T, S).record.recall_id
    refused = memory.guard(T, S, ORDER, recall_id=rid)
    action = tmp_path / "order.json"
    action.write_text(json.dumps(ORDER))

    done = cli(
        "respond",
        "-t",
        T,
        "-s",
        S,
        "--recall",
        rid,
        "--answer",
        "ordered",
        "--action",
        str(action),
        "--guard",
        refused.guard_id,
        "--json",
    )
    assert done.exit_code == 0, done.output
    record = json.loads(done.stdout)
    assert (record["recall_id"], record["guard_id"], record["action"]) == (rid, refused.guard_id, ORDER)
    plain = cli("respond", "-t", T, "-s", S, "--recall", rid, "--answer", "[bold]no markup[/bold]")
    assert plain.exit_code == 0 and "recorded for recall" in plain.stdout

    listed = cli("responses", "-t", T, "-s", S)
    assert listed.exit_code == 0 and record["response_id"] in listed.stdout and refused.guard_id in listed.stdout
    assert "[bold]no markup[/bold]" in listed.stdout
    lines = cli("responses", "-t", T, "-s", S, "--json").stdout.splitlines()
    assert [json.loads(line)["response_id"] for line in lines][-1] == record["response_id"]

    ok = cli("verify-recall", "-t", T, "-s", S, rid)
    assert ok.exit_code == 0 and "unchanged" in ok.stdout
    memory.revoke_event(T, S, "msg-43")
    moved = cli("verify-recall", "-t", T, "-s", S, rid, "--json")
    assert moved.exit_code == 1 and json.loads(moved.stdout)["changes"] == [{"id": "msg-43", "what": "revoked"}]

    (tmp_path / "broken.json").write_text('{"items": [}')
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "twice.json").write_text('{"a": 1, "a": 2}')
    one_line_error(cli("respond", "-t", T, "-s", S, "--recall", "rc-nothing", "--answer", "x"), "rc-nothing")
    one_line_error(cli("respond", "-t", T, "-s", S, "--recall", rid), "--answer")
    one_line_error(
        cli("respond", "-t", T, "-s", S, "--recall", rid, "--action", str(tmp_path / "broken.json")),
        "broken.json",
        "not a JSON document",
    )
    one_line_error(
        cli("respond", "-t", T, "-s", S, "--recall", rid, "--action", str(tmp_path / "list.json")), "JSON object"
    )
    one_line_error(
        cli("respond", "-t", T, "-s", S, "--recall", rid, "--action", str(tmp_path / "twice.json")), "duplicate key"
    )
    one_line_error(
        cli("respond", "-t", T, "-s", S, "--recall", rid, "--action", str(tmp_path / "none.json")), "cannot read"
    )
    one_line_error(
        cli("respond", "-t", T, "-s", S, "--recall", rid, "--answer", "x", "--guard", "gd-nothing"), "gd-nothing"
    )
    one_line_error(cli("verify-recall", "-t", T, "-s", S, "rc-nothing"), "rc-nothing")


# -- diagnosis ---------------------------------------------------------------------------------


def test_an_agent_that_ordered_what_the_guard_refused_diverges_at_the_response(memory, tmp_path: Path) -> None:
    remember(memory)
    attempt = memory.consolidate(T, S)
    assert attempt.status == "published" and attempt.gate_outcome == "clean"
    recalled = memory.recall(T, S, query="dinner order")
    assert recalled.mode == "summary" and "allergy-1" in recalled.record.selected_ids
    rid = recalled.record.recall_id
    refused = memory.guard(T, S, ORDER, recall_id=rid)
    assert not refused.allowed
    memory.respond(T, S, rid, answer="I cannot order that.")  # a fine answer: no divergence
    bundle = diagnose(memory, T, S, attempt.attempt_id)
    assert bundle.first_divergent is None and bundle.check("response").status == "ok"

    ordered = memory.respond(T, S, rid, answer=ANSWER, action=ORDER, guard_id=refused.guard_id)
    silent = memory.respond(T, S, rid, action=ORDER)  # the refused action again, the guard not named
    bundle = diagnose(memory, T, S, attempt.attempt_id)
    assert [c.status for c in bundle.checks[:4]] == ["ok"] * 4
    assert bundle.first_divergent == "response" and "response is the first divergent boundary" in bundle.note
    found = bundle.check("response").findings
    assert [(f.code, f.subject, f.recall_id, f.severity) for f in found] == [
        ("refusal_ignored", "allergy-1", rid, "critical")
    ] * 2
    assert found[0].detail.startswith("the recall returned food.peanuts_allowed: false and the action still held")
    assert ordered.response_id in found[0].detail and silent.response_id in found[1].detail
    assert [r.response_id for r in bundle.responses][-2:] == [ordered.response_id, silent.response_id]
    assert [g.guard_id for g in bundle.guard_results] == [refused.guard_id]

    text = "\n".join(p.read_text() for p in sorted(write_bundle(bundle, tmp_path / "plain").rglob("*.json")))
    assert "QZXPEANUT" not in text and "peanut dressing" not in text and refused.action_sha256 in text
    full = write_bundle(diagnose(memory, T, S, attempt.attempt_id, include_text=True), tmp_path / "full")
    assert "QZXPEANUT" in "\n".join(p.read_text() for p in full.rglob("*.json"))
