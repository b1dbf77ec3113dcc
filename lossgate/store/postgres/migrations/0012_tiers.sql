-- lossgate schema 12 (PostgreSQL): tiers with a clock of their own (lossgate.tiers). An
-- event is hot (raw and recent), warm (dormant, covered by a gated published summary) or
-- cold (past the second horizon: raw, still searched).
ALTER TABLE events DROP CONSTRAINT events_tier_check;
ALTER TABLE events ADD CONSTRAINT events_tier_check CHECK (tier IN ('hot', 'warm', 'cold'));

-- A tenant's settings (today: its tier policy), one JSON record per tenant.
CREATE TABLE tenant_settings (
    tenant_id  text COLLATE "C" NOT NULL PRIMARY KEY,
    updated_at timestamptz NOT NULL,
    record     json NOT NULL
);

ALTER TABLE tenant_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_settings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_settings
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
GRANT SELECT, INSERT, UPDATE ON tenant_settings TO lossgate_app;
