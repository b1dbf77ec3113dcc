-- lossgate schema 26 (PostgreSQL): the words and value atoms of each superseded or revoked
-- fact's value, kept in the transaction that retires it, so that a job extending its root
-- looks up only the retired facts that share a term with what it reads. Mirrors
-- sqlite/migrations/0018_retired_terms.sql (which says why); secured like the facts. An index
-- of the facts, as vectors are: a fact leaving the retired set deletes its rows (the ledger's
-- own tables are purged by UPDATE and keep tombstones; these hold nothing to keep).
CREATE TABLE retired_terms (
    tenant_id  text COLLATE "C" NOT NULL,
    subject_id text COLLATE "C" NOT NULL,
    term       text COLLATE "C" NOT NULL,
    fact_id    text COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant_id, subject_id, term, fact_id),
    FOREIGN KEY (tenant_id, fact_id) REFERENCES facts (tenant_id, fact_id)
);
CREATE INDEX retired_terms_by_fact ON retired_terms (tenant_id, fact_id);

CREATE TABLE retired_terms_pending (
    tenant_id  text COLLATE "C" NOT NULL,
    subject_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant_id, subject_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);
INSERT INTO retired_terms_pending (tenant_id, subject_id)
    SELECT DISTINCT tenant_id, subject_id FROM facts WHERE status IN ('superseded', 'revoked');

ALTER TABLE retired_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE retired_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON retired_terms
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
GRANT SELECT, INSERT, DELETE ON retired_terms TO lossgate_app;
ALTER TABLE retired_terms_pending ENABLE ROW LEVEL SECURITY;
ALTER TABLE retired_terms_pending FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON retired_terms_pending
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
GRANT SELECT, INSERT, DELETE ON retired_terms_pending TO lossgate_app;
