-- lossgate schema 8 (PostgreSQL): vectors for hybrid semantic search (the [semantic] extra).
--
-- One row per (item, embedding model): an event's "actor: text" or an active fact's
-- search text, embedded off the append path (lossgate.semantic.embed_pending), as
-- little-endian float32, L2-normalised, in bytea. Nearest neighbours are an exact scan
-- of one subject's vectors in the client (the primary key makes it a range read); no
-- extension is needed. Vectors are derived from content, so they go with it: the
-- triggers delete an event's vectors the moment it stops being valid and a fact's the
-- moment it stops being active, in the same transaction, whatever made the change. Each
-- change to a subject's vectors moves its clock's vectors_version, which tells a reader's
-- in-process copy of them (lossgate.semantic.ranking.VectorCache) that it is out of date.
ALTER TABLE clocks ADD COLUMN vectors_version bigint NOT NULL DEFAULT 0;

CREATE TABLE vectors (
    tenant_id  text COLLATE "C" NOT NULL,
    subject_id text COLLATE "C" NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('event', 'fact')),
    item_id    text COLLATE "C" NOT NULL,
    model      text COLLATE "C" NOT NULL,
    vector     bytea NOT NULL,
    PRIMARY KEY (tenant_id, subject_id, kind, item_id, model),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);

ALTER TABLE vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE vectors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON vectors
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
GRANT SELECT, INSERT, DELETE ON vectors TO lossgate_app;

CREATE FUNCTION lossgate_vectors_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'events' THEN
        DELETE FROM vectors WHERE tenant_id = NEW.tenant_id AND subject_id = NEW.subject_id
                              AND kind = 'event' AND item_id = NEW.event_id;
    ELSE
        DELETE FROM vectors WHERE tenant_id = NEW.tenant_id AND subject_id = NEW.subject_id
                              AND kind = 'fact' AND item_id = NEW.fact_id;
    END IF;
    UPDATE clocks SET vectors_version = vectors_version + 1
     WHERE tenant_id = NEW.tenant_id AND subject_id = NEW.subject_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER vectors_event_gone AFTER UPDATE OF state ON events
    FOR EACH ROW WHEN (NEW.state <> 'valid') EXECUTE FUNCTION lossgate_vectors_gone();
CREATE TRIGGER vectors_fact_gone AFTER UPDATE OF status ON facts
    FOR EACH ROW WHEN (NEW.status <> 'active') EXECUTE FUNCTION lossgate_vectors_gone();
