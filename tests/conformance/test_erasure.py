"""Erasure reaches the bytes (invariant 13 of docs/invariants.md), on every store.

Deleted text leaves every row a user can read back (events, facts, artifacts, attempts and
their gate reports, recall records) as soon as the deletion commits, and, after the
documented maintenance (``Admin.compact`` / ``lossgate compact``), the SQLite file and its
WAL. PostgreSQL's physical guarantees are documented in docs/concepts/deletion.md (dead tuples, WAL).
A deleted event's actor (often a person's name or e-mail address) goes with its text: from
the row, the search indexes and every record and page that showed it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lossgate import IdempotencyConflict, Money, NewEvent, NewFact
from lossgate.cli import app
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.testing.compressors import ChangeNumber

T, S = "t", "s"
SECRET = "ZQX481233"  # an identifier the atom extractor reads, and one token FTS indexes
SECRET_TEXT = f"my passport number is {SECRET}, and I live at 12 Lane"


def _everything(memory) -> str:
    """Every record of the subject the public API can read back, as one lower-cased text."""
    parts = [
        memory.events(T, S),
        memory.facts(T, S, statuses=None),
        memory.admin.artifacts(T, S),
        memory.admin.attempts(T, S),
        memory.admin.recalls(T, S, limit=10_000),
        memory.admin.log(T, S),
        memory.admin.jobs(T, S),
    ]
    return json.dumps([[r.model_dump(mode="json") for r in rs] for rs in parts]).lower()


@pytest.fixture
def secret_subject(memory):
    """A subject with filler, the passport message, a fact drawn from it, a summary that quotes
    it, a rejected attempt whose gate report names its atoms, and recalls that touched it."""
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="pp", text=SECRET_TEXT)])
    memory.append(
        [NewEvent(tenant_id=T, subject_id=S, event_id=f"e{i}", text=f"filler {i} about the weather") for i in range(60)]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="fp",
            predicate="contact.home_address",
            value="12 Lane",
            source_event_ids=["pp"],
        )
    )
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
    assert any(line == "[purged]:atom_missing" for a in memory.admin.attempts(T, S) for line in a.losses)
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
    before = {r.recall_id: r for r in memory.admin.recalls(T, S, limit=100)}
    memory.delete_event(T, S, "pp", reason="erasure request")
    after = {r.recall_id: r for r in memory.admin.recalls(T, S, limit=100)}
    assert after.keys() == before.keys()  # ids kept for audit
    for rid, old in before.items():
        new = after[rid]
        assert (new.candidate_ids, new.selected_ids, new.alias, new.clock) == (
            old.candidate_ids,
            old.selected_ids,
            old.alias,
            old.clock,
        )
        if old.query == "weather":
            assert new.query == "weather" and new.redacted is None  # it never touched the passport
        elif old.query and SECRET in old.query:
            assert new.query is None
            assert new.redacted.query_sha256 == hashlib.sha256(old.query.encode()).hexdigest()
            assert new.redacted.query_chars == len(old.query)
            assert new.redacted.cause == "delete_event pp"
    assert any(e.op == "redact_recalls" for e in memory.admin.log(T, S))


LIMIT, MOVED = "4817.39", "4818.39"  # a fact's value, and what a lossy compressor made of it


@pytest.fixture
def refused_limit(memory):
    """A refund limit only its fact states (its event names no amount), and an attempt the
    gate refused because a compressor moved the amount: its violation detail shows both."""
    memory.append(
        [
            NewEvent(
                tenant_id=T,
                subject_id=S,
                event_id="lim",
                actor="finance",
                trust="system",
                text="Refunds are capped as agreed with finance.",
            )
        ]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="lim-1",
            predicate="refund.limit",
            value=Money(amount=Decimal(LIMIT), currency="USD"),
            authority="system",
            source_event_ids=["lim"],
        )
    )
    refused = memory.consolidate(T, S, compressor=ChangeNumber())
    assert refused.status == "rejected" and refused.violations == ("lim-1:value_changed",)
    assert f"lim-1:value_changed: {LIMIT} USD -> {MOVED} USD (money)" in refused.details
    return memory


@pytest.mark.parametrize("erase", ["the fact", "its source event"])
def test_a_deleted_facts_value_leaves_the_violation_details_that_showed_it(refused_limit, store_url, erase):
    memory = refused_limit
    shown = CliRunner().invoke(app, ["--db", store_url, "attempts", "-t", T, "-s", S, "--json"]).output
    assert f"{LIMIT} USD -> {MOVED} USD" in shown  # what a person reads: both amounts
    if erase == "the fact":
        memory.delete_fact(T, S, "lim-1", reason="erasure request")
    else:
        memory.delete_event(T, S, "lim", reason="erasure request")
    (attempt,) = [a for a in memory.admin.attempts(T, S) if a.status == "rejected"]
    assert attempt.purged and attempt.details == () and attempt.violations == ("lim-1:value_changed",)
    everything = _everything(memory)
    assert LIMIT not in everything and MOVED not in everything
    shown = CliRunner().invoke(app, ["--db", store_url, "attempts", "-t", T, "-s", S, "--json"]).output
    assert "value_changed" in shown and LIMIT not in shown and MOVED not in shown
    if store_url.startswith("postgresql"):
        assert _postgresql_tables_holding(store_url, LIMIT) == [] and _postgresql_tables_holding(store_url, MOVED) == []


def test_compact_removes_deleted_text_from_the_sqlite_file_and_wal(secret_subject, store_url):
    if not store_url.startswith("sqlite"):
        pytest.skip("file bytes are SQLite's; PostgreSQL's guarantees are in the manual (docs/concepts/deletion.md)")
    memory = secret_subject
    path = Path(store_url.removeprefix("sqlite:///"))
    memory.store._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the secret is in the main file
    memory.delete_event(T, S, "pp", reason="erasure request")

    def found() -> dict[str, int]:
        return {
            p.name: p.read_bytes().lower().count(SECRET.lower().encode())
            for p in (path, path.with_name(path.name + "-wal"))
            if p.exists()
        }

    assert sum(found().values()) > 0  # purged rows are not enough: FTS segments and free space keep it
    report = memory.admin.compact()
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


def _postgresql_tables_holding(url: str, word: str) -> list[str]:
    """The tables with a row whose text holds ``word``: every row of every table, read as the
    owner (no row-level security in the way)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()
        ]
        assert "events" in tables and "recalls" in tables
        return [
            t
            for t in tables
            if conn.execute(
                f'SELECT count(*) FROM "{t}" x WHERE lower(x::text) LIKE %s', (f"%{word.lower()}%",)
            ).fetchone()[0]
        ]


def test_no_postgresql_row_holds_deleted_text(secret_subject, store_url):
    if not store_url.startswith("postgresql"):
        pytest.skip("the SQLite file is grepped byte for byte in test_compact_removes_deleted_text_...")
    secret_subject.delete_event(T, S, "pp", reason="erasure request")
    assert _postgresql_tables_holding(store_url, SECRET) == []


# -- the actor -------------------------------------------------------------------------------

ACTOR = "actor-zq7x@example.org"  # who said it: a person's e-mail address
ACTOR_WORD = "zq7x"  # the one word of it no other record holds (search indexes keep words)
ERASED_ACTOR_SCHEMA = {"sqlite": 15, "postgres": 20}  # the migration that erases stored tombstones' actors


def _said() -> NewEvent:
    return NewEvent(tenant_id=T, subject_id=S, event_id="said", actor=ACTOR, text="please call me back about it")


@pytest.fixture
def actor_subject(memory):
    """A subject whose one event by ACTOR is indexed for search, quoted by the published
    summary, read by its attempt and found by a recall that named the actor."""
    memory.append(
        [NewEvent(tenant_id=T, subject_id=S, event_id=f"e{i}", text=f"filler {i} about the weather") for i in range(60)]
    )
    memory.append([_said()])
    assert memory.consolidate(T, S).status == "published"  # the consolidation indexes every event too
    assert "said" in memory.recall(T, S, query=ACTOR).record.candidate_ids
    assert ACTOR in json.dumps([a.model_dump(mode="json") for a in memory.admin.artifacts(T, S)])
    return memory


def _tombstone(memory) -> dict:
    return next(e for e in memory.events(T, S) if e.event_id == "said").model_dump(mode="json")


def _indexed(store_url: str) -> int:
    """How many entries of the event search index hold ACTOR_WORD, read past the store."""
    if store_url.startswith("sqlite"):
        conn = sqlite3.connect(store_url.removeprefix("sqlite:///"))
        try:
            return conn.execute(
                "SELECT count(*) FROM events_fts WHERE events_fts MATCH ?", (f'"{ACTOR_WORD}"',)
            ).fetchone()[0]
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM event_terms WHERE terms @@ to_tsquery('english', %s)", (ACTOR_WORD,)
        ).fetchone()[0]


def test_deleting_an_event_erases_its_actor_and_keeps_the_rest_of_its_tombstone(actor_subject, store_url):
    memory = actor_subject
    before = _tombstone(memory)
    assert before["actor"] == ACTOR and _indexed(store_url) == 1
    memory.delete_event(T, S, "said", reason="erasure request")
    after = _tombstone(memory)
    assert (after["actor"], after["text"], after["payload"], after["state"]) == (None, None, None, "deleted")
    kept = ("event_id", "seq", "content_hash", "kind", "trust", "occurred_at", "recorded_at", "tier")
    assert {k: after[k] for k in kept} == {k: before[k] for k in kept}
    assert ACTOR_WORD not in _everything(memory)
    assert memory.consolidate(T, S).status == "published"
    assert ACTOR_WORD not in _everything(memory)
    # search: neither the index nor a recall by the actor's name finds it (that recall's
    # record keeps its own query: the caller's words, read nothing deleted)
    assert _indexed(store_url) == 0
    with memory.store.read() as tx:
        assert tx.search_events(T, S, ACTOR_WORD, limit=10) == []
    found = memory.recall(T, S, query=ACTOR)
    assert "said" not in found.record.candidate_ids and ACTOR_WORD not in found.render()


def test_a_replay_of_a_deleted_event_stays_a_no_op_and_other_content_is_refused(actor_subject):
    """The tombstone keeps the hash, which covers the actor: a replay is recognised without it."""
    memory = actor_subject
    memory.delete_event(T, S, "said")
    assert memory.append([_said()]).duplicates == ("said",)  # its time defaulted: compared at the stored one
    assert _tombstone(memory)["actor"] is None and _tombstone(memory)["state"] == "deleted"
    with pytest.raises(IdempotencyConflict):
        memory.append([_said().model_copy(update={"actor": "someone-else@example.org"})])
    assert ACTOR_WORD not in _everything(memory)


def test_lossgate_events_shows_the_tombstone_without_its_actor(actor_subject, store_url):
    runner = CliRunner(env={"COLUMNS": "400", "NO_COLOR": "1", "LOSSGATE_DB": None})

    def events(*options: str) -> str:
        result = runner.invoke(app, ["--db", store_url, "events", "--tenant", T, "--subject", S, *options])
        assert result.exit_code == 0, result.output
        return result.output

    assert ACTOR in events()
    actor_subject.delete_event(T, S, "said")
    table, lines = events(), events("--json")
    assert ACTOR_WORD not in table and ACTOR_WORD not in lines
    said = next(json.loads(line) for line in lines.splitlines() if '"said"' in line)
    assert (said["actor"], said["text"], said["state"]) == (None, None, "deleted")
    assert "(purged)" in next(line for line in table.splitlines() if " said " in line)


@pytest.fixture
def served(actor_subject):
    """The memory service over the subject's database, and a client with a key of its tenant."""
    import httpx

    from lossgate.service import create_app
    from lossgate.testing.service import serving

    _, secret = actor_subject.admin.create_api_key(T, scopes=["read", "write"])
    with (
        serving(create_app(actor_subject, close_memory=False)) as url,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as client,
    ):
        yield client


def test_the_api_and_the_inspection_page_show_no_deleted_actor(served):
    def said() -> dict:
        listed = served.get(f"/v1/subjects/{S}/events")
        assert listed.status_code == 200, listed.text
        return next(e for e in listed.json() if e["event_id"] == "said")

    def page() -> str:
        shown = served.get(f"/ui/subjects/{S}")
        assert shown.status_code == 200, shown.text
        return shown.text

    assert said()["actor"] == ACTOR and ACTOR in page()  # the published summary quotes the line
    gone = served.delete(f"/v1/subjects/{S}/events/said", params={"reason": "erasure request"})
    assert gone.status_code == 200, gone.text
    assert (gone.json()["actor"], gone.json()["text"], gone.json()["state"]) == (None, None, "deleted")
    assert said()["actor"] is None
    assert ACTOR_WORD not in served.get(f"/v1/subjects/{S}/events").text
    for read in ("artifacts", "attempts", "recalls"):
        assert ACTOR_WORD not in served.get(f"/v1/subjects/{S}/{read}").text, read
    assert ACTOR_WORD not in page()


def test_a_diagnosis_bundle_shows_no_deleted_actor(actor_subject):
    from lossgate.ops.diagnose import diagnose

    memory = actor_subject
    attempt = next(a for a in memory.admin.attempts(T, S) if "said" in a.selected_ids)

    def bundle() -> str:
        return json.dumps(diagnose(memory, T, S, attempt.attempt_id, include_text=True).files()).lower()

    assert ACTOR in bundle()
    memory.delete_event(T, S, "said")
    assert ACTOR_WORD not in bundle()
    (said,) = [e for e in diagnose(memory, T, S, attempt.attempt_id).events if e.event_id == "said"]
    assert (said.actor, said.text, said.state) == (None, None, "deleted")


def test_compact_leaves_no_byte_of_a_deleted_actor_in_the_sqlite_file(actor_subject, store_url):
    if not store_url.startswith("sqlite"):
        pytest.skip("file bytes are SQLite's; PostgreSQL's rows are read in test_no_postgresql_row_holds_...")
    memory = actor_subject
    path = Path(store_url.removeprefix("sqlite:///"))
    memory.store._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    memory.delete_event(T, S, "said", reason="erasure request")

    def found() -> dict[str, int]:
        return {
            f"{p.name} {word}": p.read_bytes().lower().count(word.encode())
            for p in (path, path.with_name(path.name + "-wal"))
            if p.exists()
            for word in (ACTOR, ACTOR_WORD)
        }

    assert sum(found().values()) > 0  # free space and the index's segments keep it until compact
    memory.admin.compact()
    assert sum(found().values()) == 0, found()
    hits = sqlite3.connect(path).execute("SELECT count(*) FROM events_fts WHERE events_fts MATCH 'weather'")
    assert hits.fetchone()[0] == 60


def test_no_postgresql_row_holds_a_deleted_actor(actor_subject, store_url):
    if not store_url.startswith("postgresql"):
        pytest.skip("the SQLite file is grepped byte for byte in test_compact_leaves_no_byte_...")
    assert _postgresql_tables_holding(store_url, ACTOR_WORD) != []
    actor_subject.delete_event(T, S, "said", reason="erasure request")
    assert _postgresql_tables_holding(store_url, ACTOR) == []
    assert _postgresql_tables_holding(store_url, ACTOR_WORD) == []


@pytest.fixture
def before_erased_actors(store_url, monkeypatch):
    """``(url, owner_url)``: an empty database migrated up to the schema before the one that
    erases stored tombstones' actors, opened by ``url`` (on PostgreSQL, as an owner that is
    not a superuser, as the migration will run) and read past row-level security by
    ``owner_url``. Migrating further is left to the test (the monkeypatch is undone first)."""
    import lossgate.store.postgres.store as postgres_store
    import lossgate.store.sqlite.store as sqlite_store
    from lossgate.store.core.migrations import pending

    engine = "sqlite" if store_url.startswith("sqlite") else "postgres"
    module = sqlite_store if engine == "sqlite" else postgres_store
    monkeypatch.setattr(
        module,
        "pending",
        lambda name, applied: [(v, script) for v, script in pending(name, applied) if v < ERASED_ACTOR_SCHEMA[engine]],
    )
    if engine == "sqlite":
        yield store_url, store_url
        return
    import os

    from lossgate.testing.postgres import login_role, scratch_database, user_url

    server = os.environ["LOSSGATE_TEST_PG_URL"]  # store_url made the cluster's roles, as a superuser
    with login_role(server, "lossgate_app", createrole=True) as owner, scratch_database(server, owner=owner) as url:
        yield user_url(url, owner), url


def test_the_migration_erases_the_actors_of_tombstones_stored_before_it(before_erased_actors, monkeypatch):
    import lossgate

    url, admin_url = before_erased_actors
    sqlite = url.startswith("sqlite")
    old = lossgate.open(url)
    assert old.store.schema_version() < ERASED_ACTOR_SCHEMA["sqlite" if sqlite else "postgres"]

    def index() -> None:
        with old.store.write() as tx:
            tx.lock_clock(T, S)
            tx.refresh_search_index()

    def delete_as_before(event_id: str) -> None:
        """What deletion wrote before this schema: text and payload purged, the actor kept."""
        if sqlite:
            conn = sqlite3.connect(url.removeprefix("sqlite:///"))
            with conn:
                conn.execute("UPDATE events SET state='deleted', text=NULL, payload=NULL WHERE event_id=?", (event_id,))
            conn.close()
            return
        import psycopg

        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(
                "WITH e AS (UPDATE events SET state='deleted', text=NULL, payload=NULL "
                "WHERE event_id=%(id)s RETURNING tenant_id, subject_id, seq) UPDATE event_terms x "
                "SET terms='' FROM e WHERE x.tenant_id=e.tenant_id AND x.subject_id=e.subject_id "
                "AND x.seq=e.seq",
                {"id": event_id},
            )

    old.append(
        [NewEvent(tenant_id=T, subject_id=S, event_id=f"e{i}", text=f"filler {i} about the weather") for i in range(5)]
    )
    old.append([_said()])
    index()
    delete_as_before("said")  # deleted once indexed: SQLite's index took its actor back
    old.append([_said().model_copy(update={"event_id": "late"})])
    delete_as_before("late")
    index()  # deleted before it was indexed: PostgreSQL's index took its actor then
    assert _indexed(admin_url) == 1
    assert [e.actor for e in old.events(T, S, states=["deleted"])] == [ACTOR, ACTOR]
    old.close()

    monkeypatch.undo()
    memory = lossgate.open(url)
    try:
        assert [(e.event_id, e.actor, e.text) for e in memory.events(T, S, states=["deleted"])] == [
            ("said", None, None),
            ("late", None, None),
        ]
        assert {e.actor for e in memory.events(T, S, states=["valid"])} == {"user"}
        assert _indexed(admin_url) == 0
        with memory.store.read() as tx:
            assert len(tx.search_events(T, S, "weather", limit=10)) == 5
        memory.delete_event(T, S, "e0")  # the index stays consistent as deletion goes on
        with memory.store.read() as tx:
            assert len(tx.search_events(T, S, "weather", limit=10)) == 4
        if sqlite:
            conn = sqlite3.connect(url.removeprefix("sqlite:///"))
            conn.execute("INSERT INTO events_fts (events_fts) VALUES ('integrity-check')")
            conn.close()
            memory.admin.compact()
            data = Path(url.removeprefix("sqlite:///")).read_bytes().lower()
            assert data.count(ACTOR.encode()) == data.count(ACTOR_WORD.encode()) == 0
        else:
            assert _postgresql_tables_holding(admin_url, ACTOR_WORD) == []
    finally:
        memory.close()


# -- the terms a retired value is looked up by ---------------------------------------------------

RETIRED_WORD = "quokkaberry"  # a superseded topic's first word: the term its fact is looked up by


@pytest.mark.parametrize("erase", ["the fact", "its source event"])
def test_a_deleted_retired_value_leaves_no_term_to_look_it_up_by(memory, store_url, erase):
    memory.append(
        [
            NewEvent(tenant_id=T, subject_id=S, event_id="w1", text="let us talk about the berries"),
            NewEvent(tenant_id=T, subject_id=S, event_id="w2", text="now about the weather"),
        ]
    )
    memory.assert_fact(
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="topic-1",
            predicate="chat.topic",
            value=f"{RETIRED_WORD} harvest",
            source_event_ids=["w1"],
        )
    )
    memory.supersede(
        T,
        S,
        "topic-1",
        NewFact(
            tenant_id=T,
            subject_id=S,
            fact_id="topic-2",
            predicate="chat.topic",
            value="weather",
            source_event_ids=["w2"],
        ),
    )

    def stating() -> list[str]:
        with memory.store.read() as tx:
            return [f.fact_id for f in tx.retired_facts_stating(T, S, [f"@{RETIRED_WORD}"], through_seq=99)]

    assert stating() == ["topic-1", "topic-2"]  # kept with the supersession: the fact, and what holds now
    if erase == "the fact":
        memory.delete_fact(T, S, "topic-1", reason="erasure request")
    else:
        memory.delete_event(T, S, "w1", reason="erasure request")
    assert stating() == []
    if store_url.startswith("postgresql"):
        assert _postgresql_tables_holding(store_url, RETIRED_WORD) == []
    else:
        rows = (
            sqlite3.connect(store_url.removeprefix("sqlite:///"))
            .execute("SELECT count(*) FROM retired_terms WHERE term LIKE ?", (f"%{RETIRED_WORD}%",))
            .fetchone()
        )
        assert rows == (0,)
