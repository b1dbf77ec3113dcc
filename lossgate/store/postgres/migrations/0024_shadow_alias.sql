-- lossgate schema 24 (PostgreSQL): the shadow alias. A tenant's shadow lane
-- (lossgate.ops.rollout) publishes its summaries to it by the same compare-and-swap as the
-- subject's alias (lossgate.publish), and recall never reads it: it is where a new
-- compressor or registry is tried on real subjects without any agent reading what it
-- wrote. Mirrors sqlite/migrations/0017_shadow_alias.sql; secured like the alias (schema 2).
CREATE TABLE shadow_aliases (
    tenant_id      text COLLATE "C" NOT NULL,
    subject_id     text COLLATE "C" NOT NULL,
    artifact_id    text COLLATE "C",
    source_epoch   bigint NOT NULL DEFAULT 0,
    covers_through bigint NOT NULL DEFAULT 0,
    updated_at     timestamptz,
    PRIMARY KEY (tenant_id, subject_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);

ALTER TABLE shadow_aliases ENABLE ROW LEVEL SECURITY;
ALTER TABLE shadow_aliases FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON shadow_aliases
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
GRANT SELECT, INSERT, UPDATE ON shadow_aliases TO lossgate_app;
