-- lossgate schema 16: the response boundary's evidence. A guard result is one check of an
-- agent's planned action against the ledger (lossgate.guard); a response is what the agent
-- finally said or did, tied to the recall it was based on (and the guard result, if any).
-- Keyed and ordered like recall records; recall_id is a column so that a deletion finds
-- the records tied to a recall it redacts in the statement. Rows are inserted, and updated
-- only to redact them (lossgate.lineage).
CREATE TABLE guard_results (
    tenant_id  TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    guard_id   TEXT NOT NULL,
    at         TEXT NOT NULL,
    recall_id  TEXT,
    record     TEXT NOT NULL,
    PRIMARY KEY (tenant_id, guard_id)
);
CREATE INDEX guard_results_by_subject ON guard_results (tenant_id, subject_id, at);

CREATE TABLE responses (
    tenant_id   TEXT NOT NULL,
    subject_id  TEXT NOT NULL,
    response_id TEXT NOT NULL,
    at          TEXT NOT NULL,
    recall_id   TEXT NOT NULL,
    record      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, response_id)
);
CREATE INDEX responses_by_subject ON responses (tenant_id, subject_id, at);
