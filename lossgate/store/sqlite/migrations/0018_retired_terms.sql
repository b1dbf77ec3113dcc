-- lossgate schema 18: the words and value atoms of each superseded or revoked fact's value.
--
-- Every line of a summary that states a retired value carries a marker
-- (lossgate.gate.superseded), so a job must know which retired values its lines may state.
-- A long history retires thousands of values; a job that reads them all costs what the
-- history holds. The ledger keeps each retired value's terms here, in the transaction that
-- retires it (a phrase under its first word, any other value under each of its atoms), and a
-- job extending its root looks up only the retired facts that share a term with what it
-- reads. A fact that leaves the retired set (deleted, purged, active again) leaves this
-- table in the same statement's transaction: deleted content is never looked up.
CREATE TABLE retired_terms (
    tenant_id  TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    term       TEXT NOT NULL,
    fact_id    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, subject_id, term, fact_id),
    FOREIGN KEY (tenant_id, fact_id) REFERENCES facts (tenant_id, fact_id)
) WITHOUT ROWID;
CREATE INDEX retired_terms_by_fact ON retired_terms (tenant_id, fact_id);

-- The subjects that retired a value before this table kept terms: their first job reads
-- every retired fact, as before, and keeps their terms (then the subject leaves this table).
CREATE TABLE retired_terms_pending (
    tenant_id  TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    PRIMARY KEY (tenant_id, subject_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
) WITHOUT ROWID;
INSERT INTO retired_terms_pending (tenant_id, subject_id)
    SELECT DISTINCT tenant_id, subject_id FROM facts WHERE status IN ('superseded', 'revoked');
