-- lossgate schema 1 (PostgreSQL): the raw layer and the fact ledger.
--
-- Mirrors sqlite/migrations/0001_ledger.sql. Differences, and why:
-- * occurred_at and valid_from are ISO 8601 text: they are caller-supplied and
--   invariant 9 keeps their UTC offset, which timestamptz would discard.
--   Server-side instants (recorded_at, detected_at, resolved_at, at, loaded_at)
--   are timestamptz: their offset means nothing and they must sort as time.
-- * payload is json, not jsonb: it is arbitrary caller JSON and jsonb rewrites
--   numbers (1e+20 comes back as the integer 100000000000000000000), which
--   would change a float into an int. Our own encodings (value, qualifiers,
--   source_event_ids, detail, document) hold only strings, ints and bools, so
--   they are jsonb.
-- * Id columns are COLLATE "C": they compare and sort bytewise, as SQLite's
--   BINARY collation does, whatever the database's default collation (under
--   en_US, 'B' < 'a' would flip and listings would differ between stores), and
--   their btree comparisons skip the locale.
-- * Every table with tenant_id has row-level security, forced, so that even a
--   query that forgets its tenant filter sees one tenant only. The store runs
--   as the NOLOGIN role lossgate_app (SET LOCAL ROLE), because superusers and
--   BYPASSRLS roles ignore policies. lossgate_app gets no DELETE: the ledger
--   purges by UPDATE and keeps tombstones (invariant 11).
--
-- A later migration that adds a tenant table must repeat the RLS block below.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'lossgate_app') THEN
        CREATE ROLE lossgate_app NOLOGIN;
    END IF;
EXCEPTION
    -- Roles are cluster-wide but our advisory lock is per database: another
    -- database may be creating the role at this very moment.
    WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;

CREATE TABLE registries (
    version      integer PRIMARY KEY,
    content_hash text NOT NULL,
    document     jsonb NOT NULL,
    loaded_at    timestamptz NOT NULL
);

CREATE TABLE clocks (
    tenant_id   text COLLATE "C" NOT NULL,
    subject_id  text COLLATE "C" NOT NULL,
    high_water  bigint NOT NULL DEFAULT 0,
    input_epoch bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, subject_id)
);

CREATE TABLE events (
    tenant_id    text COLLATE "C" NOT NULL,
    subject_id   text COLLATE "C" NOT NULL,
    seq          bigint NOT NULL,
    event_id     text COLLATE "C" NOT NULL,
    kind         text NOT NULL,
    actor        text NOT NULL,
    trust        text NOT NULL,
    text         text,
    payload      json,
    occurred_at  text NOT NULL,
    recorded_at  timestamptz NOT NULL,
    content_hash text NOT NULL,
    state        text NOT NULL DEFAULT 'valid' CHECK (state IN ('valid', 'revoked', 'deleted')),
    tier         text NOT NULL DEFAULT 'hot' CHECK (tier IN ('hot', 'cold')),
    PRIMARY KEY (tenant_id, subject_id, seq),
    UNIQUE (tenant_id, event_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);

CREATE TABLE facts (
    tenant_id        text COLLATE "C" NOT NULL,
    subject_id       text COLLATE "C" NOT NULL,
    fact_id          text COLLATE "C" NOT NULL,
    seq              bigint NOT NULL,
    predicate        text NOT NULL,
    registry_version integer NOT NULL,
    value_type       text NOT NULL,
    value            jsonb,
    qualifiers       jsonb,
    polarity         text NOT NULL,
    modality         text NOT NULL,
    authority        text NOT NULL,
    source_event_ids jsonb NOT NULL,
    status           text NOT NULL DEFAULT 'active'
                     CHECK (status IN ('active', 'superseded', 'deleted', 'revoked')),
    supersedes       text COLLATE "C",
    superseded_by    text COLLATE "C",
    valid_from       text,
    recorded_at      timestamptz NOT NULL,
    content_hash     text NOT NULL,
    PRIMARY KEY (tenant_id, fact_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);
CREATE INDEX facts_by_subject ON facts (tenant_id, subject_id, status, predicate);
CREATE INDEX facts_by_seq ON facts (tenant_id, subject_id, seq);

CREATE TABLE fact_sources (
    tenant_id  text COLLATE "C" NOT NULL,
    subject_id text COLLATE "C" NOT NULL,
    fact_id    text COLLATE "C" NOT NULL,
    event_id   text COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant_id, fact_id, event_id),
    FOREIGN KEY (tenant_id, fact_id) REFERENCES facts (tenant_id, fact_id),
    FOREIGN KEY (tenant_id, event_id) REFERENCES events (tenant_id, event_id)
);
CREATE INDEX fact_sources_by_event ON fact_sources (tenant_id, subject_id, event_id);

CREATE TABLE conflicts (
    tenant_id   text COLLATE "C" NOT NULL,
    subject_id  text COLLATE "C" NOT NULL,
    conflict_id text COLLATE "C" NOT NULL,
    predicate   text NOT NULL,
    fact_a      text COLLATE "C" NOT NULL,
    fact_b      text COLLATE "C" NOT NULL,
    status      text NOT NULL DEFAULT 'unresolved' CHECK (status IN ('unresolved', 'resolved')),
    detected_at timestamptz NOT NULL,
    resolved_at timestamptz,
    resolution  text,
    PRIMARY KEY (tenant_id, conflict_id),
    FOREIGN KEY (tenant_id, fact_a) REFERENCES facts (tenant_id, fact_id),
    FOREIGN KEY (tenant_id, fact_b) REFERENCES facts (tenant_id, fact_id)
);
CREATE INDEX conflicts_by_subject ON conflicts (tenant_id, subject_id, status);

CREATE TABLE ledger_log (
    entry_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id  text COLLATE "C" NOT NULL,
    subject_id text COLLATE "C" NOT NULL,
    at         timestamptz NOT NULL,
    op         text NOT NULL,
    target_id  text COLLATE "C" NOT NULL,
    detail     jsonb NOT NULL
);
CREATE INDEX ledger_log_by_subject ON ledger_log (tenant_id, subject_id, target_id);

-- Row-level security: one policy per tenant table, for reads and writes alike.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['clocks', 'events', 'facts', 'fact_sources', 'conflicts', 'ledger_log'] LOOP
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
GRANT SELECT, INSERT ON registries TO lossgate_app;
GRANT SELECT ON schema_migrations TO lossgate_app;
