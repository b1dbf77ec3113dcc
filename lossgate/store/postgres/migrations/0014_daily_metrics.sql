-- lossgate schema 14 (PostgreSQL): the daily fidelity metrics (lossgate.ops.daily,
-- `lossgate eval daily`), one row per figure of a run, kept so that a trend exists.
-- Mirrors sqlite/migrations/0010_daily_metrics.sql. The tenant is the first key column
-- (the distribution column of a sharded PostgreSQL); the dimension is canonical JSON
-- held as text COLLATE "C", not jsonb: it is part of the key, and its text sorts
-- bytewise as SQLite's does. Rows are only ever inserted: lossgate_app gets SELECT and
-- INSERT, nothing more.
CREATE TABLE daily_metrics (
    tenant_id   text COLLATE "C" NOT NULL,
    run_id      text COLLATE "C" NOT NULL,
    day         date NOT NULL,
    metric      text COLLATE "C" NOT NULL,
    dimension   text COLLATE "C" NOT NULL,
    value       double precision NOT NULL,
    recorded_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, run_id, metric, dimension)
);
CREATE INDEX daily_metrics_by_day ON daily_metrics (tenant_id, day, metric);

ALTER TABLE daily_metrics ENABLE ROW LEVEL SECURITY;
ALTER TABLE daily_metrics FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON daily_metrics
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
GRANT SELECT, INSERT ON daily_metrics TO lossgate_app;
