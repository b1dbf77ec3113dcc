-- lossgate schema 4: full-text search with the Porter stemmer, so a question's
-- "painted" finds a message's "paint" (recall ranks by relevance over every tier), over
-- the event's text and its actor ("What did Joanna say about ..." finds Joanna's turns).
-- The event index is rebuilt lazily from the raw text: the watermark restarts at 0.
DROP TRIGGER events_fts_purge;
DROP TABLE events_fts;
CREATE VIRTUAL TABLE events_fts USING fts5 (text, actor, content='events', content_rowid='rowid',
                                            tokenize='porter unicode61');
UPDATE events_fts_watermark SET indexed_through = 0 WHERE id = 1;
CREATE TRIGGER events_fts_purge AFTER UPDATE OF text ON events
WHEN old.rowid <= (SELECT indexed_through FROM events_fts_watermark WHERE id = 1) BEGIN
    INSERT INTO events_fts (events_fts, rowid, text, actor) VALUES ('delete', old.rowid, old.text, old.actor);
    INSERT INTO events_fts (rowid, text, actor) VALUES (new.rowid, new.text, new.actor);
END;

DROP TRIGGER facts_fts_insert;
DROP TRIGGER facts_fts_update;
DROP TABLE facts_fts;
CREATE VIRTUAL TABLE facts_fts USING fts5 (search_text, content='facts', content_rowid='rowid',
                                           tokenize='porter unicode61');
INSERT INTO facts_fts (rowid, search_text) SELECT rowid, search_text FROM facts WHERE search_text IS NOT NULL;
CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, search_text) VALUES (new.rowid, new.search_text);
END;
CREATE TRIGGER facts_fts_update AFTER UPDATE OF search_text ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text);
    INSERT INTO facts_fts (rowid, search_text) VALUES (new.rowid, new.search_text);
END;
