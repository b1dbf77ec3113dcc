-- lossgate schema 5: vectors for hybrid semantic search (the [semantic] extra).
--
-- One row per (item, embedding model): an event's "actor: text" or an active fact's
-- search text, embedded off the append path (lossgate.semantic.embed_pending), as
-- little-endian float32, L2-normalised. Vectors are derived from content, so they go
-- with it: the triggers delete an event's vectors the moment it stops being valid
-- (revoked or deleted) and a fact's the moment it stops being active, in the same
-- transaction, whatever code path made the change. Each change to a subject's vectors
-- moves its clock's vectors_version, which tells a reader's in-process copy of the
-- subject's vectors (lossgate.semantic.ranking.VectorCache) that it is out of date.
ALTER TABLE clocks ADD COLUMN vectors_version INTEGER NOT NULL DEFAULT 0;

CREATE TABLE vectors (
    tenant_id  TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('event', 'fact')),
    item_id    TEXT NOT NULL,
    model      TEXT NOT NULL,
    vector     BLOB NOT NULL,
    PRIMARY KEY (tenant_id, subject_id, kind, item_id, model)
) WITHOUT ROWID;

CREATE TRIGGER vectors_event_gone AFTER UPDATE OF state ON events WHEN new.state <> 'valid' BEGIN
    DELETE FROM vectors WHERE tenant_id = new.tenant_id AND subject_id = new.subject_id
                          AND kind = 'event' AND item_id = new.event_id;
    UPDATE clocks SET vectors_version = vectors_version + 1
     WHERE tenant_id = new.tenant_id AND subject_id = new.subject_id;
END;

CREATE TRIGGER vectors_fact_gone AFTER UPDATE OF status ON facts WHEN new.status <> 'active' BEGIN
    DELETE FROM vectors WHERE tenant_id = new.tenant_id AND subject_id = new.subject_id
                          AND kind = 'fact' AND item_id = new.fact_id;
    UPDATE clocks SET vectors_version = vectors_version + 1
     WHERE tenant_id = new.tenant_id AND subject_id = new.subject_id;
END;
