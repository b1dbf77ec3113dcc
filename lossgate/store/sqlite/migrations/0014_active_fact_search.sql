-- lossgate schema 14: the fact index holds active facts only.
--
-- A fact search only ever wants active facts, but facts_fts held every fact ever
-- asserted until its text was purged, so a query naming a predicate ("the invoice total")
-- matched, joined and dropped every superseded value of the subject's history. Now a
-- fact enters the index while it is active and leaves it as it leaves the active set
-- (superseded, revoked, deleted) or its text changes. The index is rebuilt from the
-- active facts once, here.
DROP TRIGGER facts_fts_insert;
DROP TRIGGER facts_fts_update;
INSERT INTO facts_fts (facts_fts) VALUES ('delete-all');
INSERT INTO facts_fts (rowid, search_text) SELECT rowid, search_text FROM facts WHERE status = 'active';
CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts WHEN new.status = 'active' BEGIN
    INSERT INTO facts_fts (rowid, search_text) VALUES (new.rowid, new.search_text);
END;
-- What the index holds of a row is exactly its search_text while it is active: remove
-- that, then add what the row holds now if it is active.
CREATE TRIGGER facts_fts_update AFTER UPDATE OF search_text, status ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, search_text)
        SELECT 'delete', old.rowid, old.search_text WHERE old.status = 'active';
    INSERT INTO facts_fts (rowid, search_text) SELECT new.rowid, new.search_text WHERE new.status = 'active';
END;
