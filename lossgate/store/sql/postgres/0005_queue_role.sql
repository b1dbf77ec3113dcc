-- lossgate schema 5 (PostgreSQL): the rebuild queue without a tenant-wide view for the
-- application role.
--
-- Workers claim jobs of every tenant, so something must see every tenant's job rows.
-- Until now lossgate_app could, after set_config('lossgate.scope', 'queue'): any
-- client of that role could set the flag. Now only the NOLOGIN role lossgate_queue
-- sees across tenants, and lossgate_app reaches it only through two SECURITY DEFINER
-- functions that claim one due job or extend one lease, and return nothing else.
-- The job table itself is back under the plain tenant policy.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'lossgate_queue') THEN
        CREATE ROLE lossgate_queue NOLOGIN;
    END IF;
EXCEPTION
    -- Roles are cluster-wide; another database may be creating it right now.
    WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;

DO $$
BEGIN
    -- Handing the functions to lossgate_queue needs membership in it (superusers
    -- have it) and the role's CREATE on this schema. The role cannot log in, so
    -- only the migrating role (the owner of every table here) can act as it.
    IF NOT pg_has_role(current_user, 'lossgate_queue', 'MEMBER') THEN
        EXECUTE format('GRANT lossgate_queue TO %I', current_user);
    END IF;
    EXECUTE format('GRANT USAGE, CREATE ON SCHEMA %I TO lossgate_queue', current_schema());
END
$$;

GRANT SELECT, UPDATE ON jobs TO lossgate_queue;

DROP POLICY tenant_isolation ON jobs;
CREATE POLICY tenant_isolation ON jobs
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
CREATE POLICY queue_workers ON jobs FOR ALL TO lossgate_queue USING (true) WITH CHECK (true);

DO $$
BEGIN
    -- search_path pinned to this schema (then pg_temp) so a caller cannot
    -- substitute its own "jobs" table inside a SECURITY DEFINER function.
    EXECUTE format($f$
        CREATE FUNCTION lossgate_claim_job(p_owner text, p_lease_until timestamptz, p_now timestamptz)
        RETURNS SETOF jobs LANGUAGE sql SECURITY DEFINER SET search_path = %I, pg_temp AS $body$
            UPDATE jobs SET status = 'running', lease_owner = p_owner, lease_expires_at = p_lease_until,
                            tries = tries + 1
            WHERE job_id = (
                SELECT job_id FROM jobs
                WHERE (status = 'pending' AND run_after <= p_now)
                   OR (status = 'running' AND lease_expires_at < p_now)
                ORDER BY run_after, job_id LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING *
        $body$ $f$, current_schema());
    EXECUTE format($f$
        CREATE FUNCTION lossgate_heartbeat_job(p_job_id bigint, p_owner text, p_lease_until timestamptz)
        RETURNS boolean LANGUAGE sql SECURITY DEFINER SET search_path = %I, pg_temp AS $body$
            WITH renewed AS (
                UPDATE jobs SET lease_expires_at = p_lease_until
                WHERE job_id = p_job_id AND status = 'running' AND lease_owner = p_owner
                RETURNING 1)
            SELECT count(*) = 1 FROM renewed
        $body$ $f$, current_schema());
END
$$;

ALTER FUNCTION lossgate_claim_job(text, timestamptz, timestamptz) OWNER TO lossgate_queue;
ALTER FUNCTION lossgate_heartbeat_job(bigint, text, timestamptz) OWNER TO lossgate_queue;
REVOKE ALL ON FUNCTION lossgate_claim_job(text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION lossgate_heartbeat_job(bigint, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lossgate_claim_job(text, timestamptz, timestamptz) TO lossgate_app;
GRANT EXECUTE ON FUNCTION lossgate_heartbeat_job(bigint, text, timestamptz) TO lossgate_app;
