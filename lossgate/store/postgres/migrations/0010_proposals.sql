-- lossgate schema 10 (PostgreSQL): facts proposed by an extractor from raw events
-- (lossgate.extract), kept with their outcome, and how far each subject's events have
-- been read for them.
CREATE TABLE proposals (
    tenant_id   text COLLATE "C" NOT NULL,
    subject_id  text COLLATE "C" NOT NULL,
    proposal_id text COLLATE "C" NOT NULL,
    status      text NOT NULL,
    created_at  timestamptz NOT NULL,
    record      json NOT NULL,
    PRIMARY KEY (tenant_id, proposal_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);
CREATE INDEX proposals_by_subject ON proposals (tenant_id, subject_id, status, created_at);
ALTER TABLE clocks ADD COLUMN extracted_through bigint NOT NULL DEFAULT 0;

ALTER TABLE proposals ENABLE ROW LEVEL SECURITY;
ALTER TABLE proposals FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON proposals
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
GRANT SELECT, INSERT, UPDATE ON proposals TO lossgate_app;
