-- lossgate schema 4 (PostgreSQL): keyword search over facts (predicate, value and
-- qualifiers). A purge (deletion) empties search_text and so drops the fact from the index.
ALTER TABLE facts ADD COLUMN search_text text;
CREATE INDEX facts_search ON facts USING gin (to_tsvector('simple', coalesce(search_text, '')));

-- Facts of one status in seq order (recall's deleted-source filter, status listings).
CREATE INDEX facts_by_status_seq ON facts (tenant_id, subject_id, status, seq);
