-- lossgate schema 17: the shadow alias. A tenant's shadow lane (lossgate.ops.rollout)
-- publishes its summaries to it by the same compare-and-swap as the subject's alias
-- (lossgate.publish), and recall never reads it: it is where a new compressor or registry
-- is tried on real subjects without any agent reading what it wrote.
CREATE TABLE shadow_aliases (
    tenant_id      TEXT NOT NULL,
    subject_id     TEXT NOT NULL,
    artifact_id    TEXT,
    source_epoch   INTEGER NOT NULL DEFAULT 0,
    covers_through INTEGER NOT NULL DEFAULT 0,
    updated_at     TEXT,
    PRIMARY KEY (tenant_id, subject_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
) WITHOUT ROWID;
