-- lossgate schema 2 (PostgreSQL): the derived layer (artifacts, alias, lineage,
-- attempts), recall records, the rebuild queue and full-text search.
-- Mirrors sqlite/migrations/0002_derived.sql. As in schema 1: server instants are
-- timestamptz; whole documents that are stored and returned as written (an
-- artifact's body, manifest and gate report, attempt and recall records) are
-- json, which keeps their numbers exactly as written; identity columns stand in
-- for SQLite's rowid where order of insertion breaks ties.
ALTER TABLE facts ADD COLUMN criticality text NOT NULL DEFAULT 'important';
CREATE INDEX facts_by_criticality ON facts (tenant_id, subject_id, status, criticality, seq);

CREATE TABLE aliases (
    tenant_id      text COLLATE "C" NOT NULL,
    subject_id     text COLLATE "C" NOT NULL,
    artifact_id    text COLLATE "C",
    source_epoch   bigint NOT NULL DEFAULT 0,
    covers_through bigint NOT NULL DEFAULT 0,
    updated_at     timestamptz,
    PRIMARY KEY (tenant_id, subject_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);

CREATE TABLE artifacts (
    tenant_id    text COLLATE "C" NOT NULL,
    subject_id   text COLLATE "C" NOT NULL,
    artifact_id  text COLLATE "C" NOT NULL,
    state        text NOT NULL CHECK (state IN ('candidate', 'published', 'retired', 'stale', 'failed', 'abandoned')),
    body         jsonb NOT NULL,  -- jsonb: recall reads its summary without parsing the whole body
    manifest     json NOT NULL,
    gate         json NOT NULL,
    created_at   timestamptz NOT NULL,
    state_reason text,
    created_no   bigint GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (tenant_id, artifact_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);
CREATE INDEX artifacts_by_subject ON artifacts (tenant_id, subject_id, state);

CREATE TABLE lineage (
    tenant_id   text COLLATE "C" NOT NULL,
    subject_id  text COLLATE "C" NOT NULL,
    artifact_id text COLLATE "C" NOT NULL,
    input_kind  text NOT NULL CHECK (input_kind IN ('event', 'fact', 'artifact')),
    input_id    text COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant_id, artifact_id, input_kind, input_id),
    FOREIGN KEY (tenant_id, artifact_id) REFERENCES artifacts (tenant_id, artifact_id)
);
CREATE INDEX lineage_by_input ON lineage (tenant_id, subject_id, input_id);

CREATE TABLE attempts (
    tenant_id  text COLLATE "C" NOT NULL,
    subject_id text COLLATE "C" NOT NULL,
    attempt_id text COLLATE "C" NOT NULL,
    number     integer NOT NULL,
    status     text NOT NULL,
    record     json NOT NULL,
    started_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, attempt_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);
CREATE INDEX attempts_by_subject ON attempts (tenant_id, subject_id, number);

CREATE TABLE recalls (
    tenant_id  text COLLATE "C" NOT NULL,
    subject_id text COLLATE "C" NOT NULL,
    recall_id  text COLLATE "C" NOT NULL,
    at         timestamptz NOT NULL,
    mode       text NOT NULL,
    record     json NOT NULL,
    recall_no  bigint GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (tenant_id, recall_id)
);
CREATE INDEX recalls_by_subject ON recalls (tenant_id, subject_id, at);

CREATE TABLE jobs (
    job_id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id        text COLLATE "C" NOT NULL,
    subject_id       text COLLATE "C" NOT NULL,
    status           text NOT NULL CHECK (status IN ('pending', 'running', 'done', 'review')),
    reason           text NOT NULL,
    run_after        timestamptz NOT NULL,
    tries            integer NOT NULL DEFAULT 0,
    lease_owner      text COLLATE "C",
    lease_expires_at timestamptz,
    enqueued_at      timestamptz NOT NULL,
    finished_at      timestamptz
);
-- At most one pending job per subject: many changes enqueue one rebuild.
CREATE UNIQUE INDEX jobs_one_pending ON jobs (tenant_id, subject_id) WHERE status = 'pending';
CREATE INDEX jobs_claim ON jobs (status, run_after);

-- Full-text search over event text. The 'simple' configuration (lower-case, no
-- stemming, no stop words) is the closest to SQLite FTS5's unicode61 tokenizer;
-- a purge sets text to NULL, which empties the vector.
CREATE INDEX events_text_search ON events USING gin (to_tsvector('simple', coalesce(text, '')));

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['aliases', 'artifacts', 'lineage', 'attempts', 'recalls'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I '
            'USING (tenant_id = current_setting(''lossgate.tenant'', true)) '
            'WITH CHECK (tenant_id = current_setting(''lossgate.tenant'', true))', t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %I TO lossgate_app', t);
    END LOOP;
END
$$;

-- The queue is shared by every worker of every tenant: claim_job must see all
-- tenants' jobs, so a transaction may widen its view of this table, and only
-- this one, with set_config('lossgate.scope', 'queue', true). Jobs hold ids and
-- a reason, never content; writes still need the row's own tenant.
ALTER TABLE jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE jobs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON jobs
    USING (tenant_id = current_setting('lossgate.tenant', true)
           OR current_setting('lossgate.scope', true) = 'queue')
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
GRANT SELECT, INSERT, UPDATE ON jobs TO lossgate_app;
