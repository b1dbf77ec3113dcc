-- lossgate schema 7: taint policies, tenant-level rules that set the trust of every
-- matching event (lossgate.ledger.Ledger.set_taint_policy). Every version is kept; the
-- newest version of a policy is the one in force.
CREATE TABLE taint_policies (
    tenant_id  TEXT NOT NULL,
    policy_id  TEXT NOT NULL,
    version    INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    record     TEXT NOT NULL,
    PRIMARY KEY (tenant_id, policy_id, version)
);
