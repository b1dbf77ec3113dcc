-- lossgate schema 3: keyword search over facts (predicate, value and qualifiers).
-- Facts are few next to events, so their index is kept in step by triggers; a purge
-- (deletion) empties search_text and so removes the fact from the index.
ALTER TABLE facts ADD COLUMN search_text TEXT;
CREATE VIRTUAL TABLE facts_fts USING fts5 (search_text, content='facts', content_rowid='rowid');
CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, search_text) VALUES (new.rowid, new.search_text);
END;
CREATE TRIGGER facts_fts_update AFTER UPDATE OF search_text ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text);
    INSERT INTO facts_fts (rowid, search_text) VALUES (new.rowid, new.search_text);
END;

-- Facts of one status in seq order (recall's deleted-source filter, status listings):
-- without it SQLite walks the whole subject in seq order to find a handful of rows.
CREATE INDEX facts_by_status_seq ON facts (tenant_id, subject_id, status, seq);
