-- lossgate schema 10: the daily fidelity metrics (lossgate.ops.daily, `lossgate eval daily`),
-- one row per figure of a run, kept so that a trend exists. The tenant is the first key
-- column; the dimension is canonical JSON text (part of the key: {} for the tenant as a
-- whole, {"registry_version":3} for one predicate registry's rebuilds). Rows are only
-- ever inserted.
CREATE TABLE daily_metrics (
    tenant_id   TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    day         TEXT NOT NULL,
    metric      TEXT NOT NULL,
    dimension   TEXT NOT NULL,
    value       REAL NOT NULL,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, run_id, metric, dimension)
);
CREATE INDEX daily_metrics_by_day ON daily_metrics (tenant_id, day, metric);
