-- lossgate schema 2: the derived layer (artifacts, alias, lineage, attempts),
-- recall records, the rebuild queue and full-text search.
ALTER TABLE facts ADD COLUMN criticality TEXT NOT NULL DEFAULT 'important';
CREATE INDEX facts_by_criticality ON facts (tenant_id, subject_id, status, criticality, seq);

CREATE TABLE aliases (
    tenant_id      TEXT NOT NULL,
    subject_id     TEXT NOT NULL,
    artifact_id    TEXT,
    source_epoch   INTEGER NOT NULL DEFAULT 0,
    covers_through INTEGER NOT NULL DEFAULT 0,
    updated_at     TEXT,
    PRIMARY KEY (tenant_id, subject_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
) WITHOUT ROWID;

CREATE TABLE artifacts (
    tenant_id    TEXT NOT NULL,
    subject_id   TEXT NOT NULL,
    artifact_id  TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('candidate', 'published', 'retired', 'stale', 'failed', 'abandoned')),
    body         TEXT NOT NULL,
    manifest     TEXT NOT NULL,
    gate         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    state_reason TEXT,
    PRIMARY KEY (tenant_id, artifact_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);
CREATE INDEX artifacts_by_subject ON artifacts (tenant_id, subject_id, state);

CREATE TABLE lineage (
    tenant_id   TEXT NOT NULL,
    subject_id  TEXT NOT NULL,
    artifact_id TEXT NOT NULL,
    input_kind  TEXT NOT NULL CHECK (input_kind IN ('event', 'fact', 'artifact')),
    input_id    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, artifact_id, input_kind, input_id),
    FOREIGN KEY (tenant_id, artifact_id) REFERENCES artifacts (tenant_id, artifact_id)
) WITHOUT ROWID;
CREATE INDEX lineage_by_input ON lineage (tenant_id, subject_id, input_id);

CREATE TABLE attempts (
    tenant_id      TEXT NOT NULL,
    subject_id     TEXT NOT NULL,
    attempt_id     TEXT NOT NULL,
    number         INTEGER NOT NULL,
    status         TEXT NOT NULL,
    record         TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    PRIMARY KEY (tenant_id, attempt_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);
CREATE INDEX attempts_by_subject ON attempts (tenant_id, subject_id, number);

CREATE TABLE recalls (
    tenant_id  TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    recall_id  TEXT NOT NULL,
    at         TEXT NOT NULL,
    mode       TEXT NOT NULL,
    record     TEXT NOT NULL,
    PRIMARY KEY (tenant_id, recall_id)
);
CREATE INDEX recalls_by_subject ON recalls (tenant_id, subject_id, at);

CREATE TABLE jobs (
    job_id           INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id        TEXT NOT NULL,
    subject_id       TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'review')),
    reason           TEXT NOT NULL,
    run_after        TEXT NOT NULL,
    tries            INTEGER NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    lease_expires_at TEXT,
    enqueued_at      TEXT NOT NULL,
    finished_at      TEXT
);
-- At most one pending job per subject: many changes enqueue one rebuild.
CREATE UNIQUE INDEX jobs_one_pending ON jobs (tenant_id, subject_id) WHERE status = 'pending';
CREATE INDEX jobs_claim ON jobs (status, run_after);

-- Full-text search over event text: an external-content FTS5 index, filled lazily.
-- Indexing costs about as much as the append itself, so appends do not pay it: the
-- store indexes everything past the watermark just before a search (and workers do
-- it in the background). A purge on deletion removes indexed text from the index.
CREATE VIRTUAL TABLE events_fts USING fts5 (text, content='events', content_rowid='rowid');
CREATE TABLE events_fts_watermark (id INTEGER PRIMARY KEY CHECK (id = 1), indexed_through INTEGER NOT NULL);
INSERT INTO events_fts_watermark (id, indexed_through) VALUES (1, 0);
CREATE TRIGGER events_fts_purge AFTER UPDATE OF text ON events
WHEN old.rowid <= (SELECT indexed_through FROM events_fts_watermark WHERE id = 1) BEGIN
    INSERT INTO events_fts (events_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO events_fts (rowid, text) VALUES (new.rowid, new.text);
END;
