-- lossgate schema 15: deleting an event erases its actor with its text and payload.
--
-- An actor is often a person's name or e-mail address. A tombstone keeps the event's id,
-- seq, content hash, state, kind, trust and times; its actor is NULL. The NOT NULL on
-- events.actor is lifted in place, as schema 8 widened the CHECK on events.tier (the
-- documented procedure for a change that leaves every stored row valid: sqlite.org,
-- "ALTER TABLE", making other kinds of table schema changes); the trigger created below
-- moves the schema cookie, so every other connection reloads the schema (RESET reloads
-- this one).
PRAGMA writable_schema=ON;
UPDATE sqlite_master SET sql = replace(sql, 'actor        TEXT NOT NULL,', 'actor        TEXT,')
WHERE type = 'table' AND name = 'events';
PRAGMA writable_schema=RESET;

-- The tombstones stored before this schema lose their actor too. The full-text index
-- held the actor of every event deleted after the index took it (the purge trigger put
-- the row back with its actor), and which tombstones it holds is not recorded: it is
-- emptied and takes again the events through its watermark that still have text. From
-- here on it holds exactly those: the trigger removes a row whose text or actor is purged
-- and puts back only a row that still has text.
DROP TRIGGER events_fts_purge;
INSERT INTO events_fts (events_fts) VALUES ('delete-all');
UPDATE events SET actor = NULL WHERE state = 'deleted' AND actor IS NOT NULL;
INSERT INTO events_fts (rowid, text, actor)
    SELECT rowid, text, actor FROM events
    WHERE text IS NOT NULL AND rowid <= (SELECT indexed_through FROM events_fts_watermark WHERE id = 1);
CREATE TRIGGER events_fts_purge AFTER UPDATE OF text, actor ON events
WHEN old.rowid <= (SELECT indexed_through FROM events_fts_watermark WHERE id = 1) BEGIN
    INSERT INTO events_fts (events_fts, rowid, text, actor)
        SELECT 'delete', old.rowid, old.text, old.actor WHERE old.text IS NOT NULL;
    INSERT INTO events_fts (rowid, text, actor) SELECT new.rowid, new.text, new.actor WHERE new.text IS NOT NULL;
END;
