-- lossgate schema 6: facts proposed by an extractor from raw events (lossgate.extract),
-- kept with their outcome, and how far each subject's events have been read for them.
CREATE TABLE proposals (
    tenant_id   TEXT NOT NULL,
    subject_id  TEXT NOT NULL,
    proposal_id TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    record      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, proposal_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);
CREATE INDEX proposals_by_subject ON proposals (tenant_id, subject_id, status, created_at);
ALTER TABLE clocks ADD COLUMN extracted_through INTEGER NOT NULL DEFAULT 0;
