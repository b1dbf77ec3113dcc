-- lossgate schema 3 (PostgreSQL): full-text indexing off the append path.
--
-- Indexing an event's text costs about a third of inserting the event, so appends
-- no longer pay it (the SQLite store made the same move). Each subject's clock
-- records how far its events are indexed; refresh_search_index indexes the rest
-- of the subjects its transaction has locked, and search_events reads the index
-- up to that mark and the raw text beyond it, so a search never misses fresh
-- text. The mark needs no gap handling: a subject's events are written under its
-- clock lock, so once seq N is visible every seq below it is too.
DROP INDEX events_text_search;

ALTER TABLE clocks ADD COLUMN search_indexed_through bigint NOT NULL DEFAULT 0;

CREATE TABLE event_terms (
    tenant_id  text COLLATE "C" NOT NULL,
    subject_id text COLLATE "C" NOT NULL,
    seq        bigint NOT NULL,
    terms      tsvector NOT NULL,
    PRIMARY KEY (tenant_id, subject_id, seq),
    FOREIGN KEY (tenant_id, subject_id, seq) REFERENCES events (tenant_id, subject_id, seq)
);
CREATE INDEX event_terms_search ON event_terms USING gin (terms);

ALTER TABLE event_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON event_terms
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
GRANT SELECT, INSERT, UPDATE ON event_terms TO lossgate_app;
