"""Erasure reaches the bytes (DESIGN.md invariant 13; issue 9, findings 3 and 4), on every store.

Deleted text leaves every row a user can read back (events, facts, artifacts, attempts and
their gate reports, recall records) as soon as the deletion commits, and, after the
documented maintenance (``Memory.compact`` / ``lossgate compact``), the SQLite file and its
WAL. PostgreSQL's physical guarantees are documented in the README (dead tuples, WAL).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lossgate import NewEvent, NewFact
from lossgate.cli import app
from lossgate.consolidate.pipeline import ConsolidationConfig

T, S = "t", "s"
SECRET = "ZQX481233"  # an identifier the atom extractor reads, and one token FTS indexes
SECRET_TEXT = f"my passport number is {SECRET}, and I live at 12 Lane"


def _everything(memory) -> str:
    """Every record of the subject the public API can read back, as one lower-cased text."""
    parts = [
        memory.events(T, S), memory.facts(T, S, statuses=None), memory.artifacts(T, S), memory.attempts(T, S),
        memory.recalls(T, S, limit=10_000), memory.log(T, S), memory.jobs(T, S),
    ]
    return json.dumps([[r.model_dump(mode="json") for r in rs] for rs in parts]).lower()


@pytest.fixture
def secret_subject(memory):
    """A subject with filler, the passport message, a fact drawn from it, a summary that quotes
    it, a rejected attempt whose gate report names its atoms, and recalls that touched it."""
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="pp", text=SECRET_TEXT)])
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id=f"e{i}", text=f"filler {i} about the weather")
                   for i in range(60)])
    memory.assert_fact(NewFact(tenant_id=T, subject_id=S, fact_id="fp", predicate="contact.home_address",
                               value="12 Lane", source_event_ids=["pp"]))
    memory.recall(T, S, query=f"passport {SECRET}")  # raw mode: the query finds the event
    memory.recall(T, S, query="weather")  # touches nothing secret
    # A budget too small for the whole conversation: the (oldest) passport line is a recorded loss.
    tight = memory.consolidate(T, S, config=ConsolidationConfig(budget_tokens=120))
    assert tight.status == "published"
    assert any(SECRET in line for line in tight.losses)  # the gate report names the lost atom
    memory.consolidate(T, S)
    memory.recall(T, S, query=f"what is my passport {SECRET}")  # summary mode: the summary quotes it
    assert SECRET.lower() in _everything(memory)
    return memory


def test_deleting_the_event_leaves_no_trace_in_any_record(secret_subject):
    memory = secret_subject
    memory.delete_event(T, S, "pp", reason="erasure request")
    assert SECRET.lower() not in _everything(memory)
    assert "passport" not in _everything(memory)
    assert any(line == "[purged]:atom_missing" for a in memory.attempts(T, S) for line in a.losses)
    assert memory.consolidate(T, S).status == "published"
    assert SECRET.lower() not in _everything(memory)


def test_deleting_the_fact_erases_its_source_text_from_every_record(secret_subject):
    memory = secret_subject
    memory.delete_fact(T, S, "fp", reason="erasure request")
    memory.consolidate(T, S)
    shown = memory.recall(T, S, query="passport")
    assert SECRET not in (shown.summary or "") and all(SECRET not in (e.text or "") for e in shown.events)
    # the event it was drawn from is deleted with it: its text is in no record at all
    assert SECRET.lower() not in _everything(memory)


def test_recall_records_that_touched_deleted_content_keep_only_the_querys_hash_and_length(secret_subject):
    memory = secret_subject
    before = {r.recall_id: r for r in memory.recalls(T, S, limit=100)}
    memory.delete_event(T, S, "pp", reason="erasure request")
    after = {r.recall_id: r for r in memory.recalls(T, S, limit=100)}
    assert after.keys() == before.keys()  # ids kept for audit
    for rid, old in before.items():
        new = after[rid]
        assert (new.candidate_ids, new.selected_ids, new.alias, new.clock) == (
            old.candidate_ids, old.selected_ids, old.alias, old.clock)
        if old.query == "weather":
            assert new.query == "weather" and new.redacted is None  # it never touched the passport
        elif old.query and SECRET in old.query:
            assert new.query is None
            assert new.redacted.query_sha256 == hashlib.sha256(old.query.encode()).hexdigest()
            assert new.redacted.query_chars == len(old.query)
            assert new.redacted.cause == "delete_event pp"
    assert any(e.op == "redact_recalls" for e in memory.log(T, S))


def test_compact_removes_deleted_text_from_the_sqlite_file_and_wal(secret_subject, store_url):
    if not store_url.startswith("sqlite"):
        pytest.skip("file bytes are SQLite's; PostgreSQL's guarantees are in the README's deletion section")
    memory = secret_subject
    path = Path(store_url.removeprefix("sqlite:///"))
    memory.store._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the secret is in the main file
    memory.delete_event(T, S, "pp", reason="erasure request")

    def found() -> dict[str, int]:
        return {p.name: p.read_bytes().lower().count(SECRET.lower().encode())
                for p in (path, path.with_name(path.name + "-wal")) if p.exists()}

    assert sum(found().values()) > 0  # purged rows are not enough: FTS segments and free space keep it
    report = memory.compact()
    assert report.steps[0] == "fts optimize" and report.bytes_after is not None
    assert sum(found().values()) == 0, found()
    # the memory still works, and search still finds what was not deleted
    hits = sqlite3.connect(path).execute("SELECT count(*) FROM events_fts WHERE events_fts MATCH 'weather'")
    assert hits.fetchone()[0] == 60
    assert memory.consolidate(T, S).status in ("published", "skipped")


def test_compact_runs_from_the_cli(secret_subject, store_url):
    memory = secret_subject
    memory.delete_event(T, S, "pp")
    result = CliRunner().invoke(app, ["--db", store_url, "compact"])
    assert result.exit_code == 0, result.output
    assert "compacted:" in result.output


def test_no_postgresql_row_holds_deleted_text(secret_subject, store_url):
    """Every row of every table, read as the owner (no row-level security in the way)."""
    if not store_url.startswith("postgresql"):
        pytest.skip("the SQLite file is grepped byte for byte in test_compact_removes_deleted_text_...")
    import psycopg

    secret_subject.delete_event(T, S, "pp", reason="erasure request")
    with psycopg.connect(store_url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()]
        assert "events" in tables and "recalls" in tables
        holding = [t for t in tables if conn.execute(
            f'SELECT count(*) FROM "{t}" x WHERE lower(x::text) LIKE %s', (f"%{SECRET.lower()}%",)).fetchone()[0]]
    assert holding == []
