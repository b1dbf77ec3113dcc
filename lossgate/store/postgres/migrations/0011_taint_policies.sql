-- lossgate schema 11 (PostgreSQL): taint policies, tenant-level rules that set the trust
-- of every matching event (lossgate.ledger.Ledger.set_taint_policy). Every version is
-- kept; the newest version of a policy is the one in force.
CREATE TABLE taint_policies (
    tenant_id  text COLLATE "C" NOT NULL,
    policy_id  text COLLATE "C" NOT NULL,
    version    bigint NOT NULL,
    created_at timestamptz NOT NULL,
    record     json NOT NULL,
    PRIMARY KEY (tenant_id, policy_id, version)
);

ALTER TABLE taint_policies ENABLE ROW LEVEL SECURITY;
ALTER TABLE taint_policies FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON taint_policies
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
GRANT SELECT, INSERT ON taint_policies TO lossgate_app;
