-- lossgate schema 21 (PostgreSQL): the response boundary's evidence. A guard result is one
-- check of an agent's planned action against the ledger (lossgate.guard); a response is what
-- the agent finally said or did, tied to the recall it was based on (and the guard result,
-- if any). Mirrors sqlite/migrations/0016_responses.sql; keyed, ordered and secured like
-- recall records (schema 2): json records as written, an identity column for creation
-- order, the tenant policy forced, SELECT, INSERT and UPDATE for lossgate_app (rows are
-- updated only to redact them: lossgate.lineage).
CREATE TABLE guard_results (
    tenant_id  text COLLATE "C" NOT NULL,
    subject_id text COLLATE "C" NOT NULL,
    guard_id   text COLLATE "C" NOT NULL,
    at         timestamptz NOT NULL,
    recall_id  text COLLATE "C",
    record     json NOT NULL,
    guard_no   bigint GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (tenant_id, guard_id)
);
CREATE INDEX guard_results_by_subject ON guard_results (tenant_id, subject_id, at);

CREATE TABLE responses (
    tenant_id   text COLLATE "C" NOT NULL,
    subject_id  text COLLATE "C" NOT NULL,
    response_id text COLLATE "C" NOT NULL,
    at          timestamptz NOT NULL,
    recall_id   text COLLATE "C" NOT NULL,
    record      json NOT NULL,
    response_no bigint GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (tenant_id, response_id)
);
CREATE INDEX responses_by_subject ON responses (tenant_id, subject_id, at);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['guard_results', 'responses'] LOOP
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
