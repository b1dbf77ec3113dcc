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

GRANT SELECT, UPDATE ON jobs TO lossgate_queue;

DROP POLICY tenant_isolation ON jobs;
CREATE POLICY tenant_isolation ON jobs
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
CREATE POLICY queue_workers ON jobs FOR ALL TO lossgate_queue USING (true) WITH CHECK (true);

DO $$
DECLARE
    granted boolean := NOT pg_has_role(current_user, 'lossgate_queue', 'MEMBER');
BEGIN
    -- search_path pinned to this schema (then pg_temp) so a caller cannot
    -- substitute its own "jobs" table inside a SECURITY DEFINER function.
    --
    -- Time comes from the caller (workers on other hosts, tests with their own
    -- clocks) but is clamped to the server's: a claim may look at most 5 s ahead,
    -- so a client cannot take a live lease or a job still in backoff by claiming
    -- "tomorrow", and a lease lasts at most an hour past that.
    EXECUTE pg_catalog.format($f$
        CREATE FUNCTION lossgate_claim_job(p_owner text, p_lease_until timestamptz, p_now timestamptz)
        RETURNS SETOF jobs LANGUAGE sql SECURITY DEFINER SET search_path = %I, pg_temp AS $body$
            WITH t AS (SELECT least(p_now, clock_timestamp() + interval '5 seconds') AS now)
            UPDATE jobs SET status = 'running', lease_owner = p_owner, tries = tries + 1,
                            lease_expires_at = least(greatest(p_lease_until, t.now), t.now + interval '1 hour')
            FROM t
            WHERE job_id = (
                SELECT job_id FROM jobs, t
                WHERE (status = 'pending' AND run_after <= t.now)
                   OR (status = 'running' AND lease_expires_at < t.now)
                ORDER BY run_after, job_id LIMIT 1 FOR UPDATE OF jobs SKIP LOCKED)
            RETURNING jobs.*
        $body$ $f$, current_schema());
    EXECUTE pg_catalog.format($f$
        CREATE FUNCTION lossgate_heartbeat_job(p_job_id bigint, p_owner text, p_lease_until timestamptz)
        RETURNS boolean LANGUAGE sql SECURITY DEFINER SET search_path = %I, pg_temp AS $body$
            WITH renewed AS (
                UPDATE jobs SET lease_expires_at = least(p_lease_until, clock_timestamp() + interval '1 hour')
                WHERE job_id = p_job_id AND status = 'running' AND lease_owner = p_owner
                RETURNING 1)
            SELECT count(*) = 1 FROM renewed
        $body$ $f$, current_schema());

    -- Hand the functions to lossgate_queue. That needs membership in it (superusers
    -- have it) and its CREATE on this schema, both only for this moment: the role
    -- is cluster-wide, and a member keeping either would see every tenant's jobs
    -- and could create objects in every lossgate database's schema.
    IF granted THEN
        EXECUTE pg_catalog.format('GRANT lossgate_queue TO %I', current_user);
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE, CREATE ON SCHEMA %I TO lossgate_queue', current_schema());
    ALTER FUNCTION lossgate_claim_job(text, timestamptz, timestamptz) OWNER TO lossgate_queue;
    ALTER FUNCTION lossgate_heartbeat_job(bigint, text, timestamptz) OWNER TO lossgate_queue;
    EXECUTE pg_catalog.format('REVOKE CREATE ON SCHEMA %I FROM lossgate_queue', current_schema());
    IF granted THEN
        EXECUTE pg_catalog.format('REVOKE lossgate_queue FROM %I', current_user);
    END IF;
END
$$;

REVOKE ALL ON FUNCTION lossgate_claim_job(text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION lossgate_heartbeat_job(bigint, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lossgate_claim_job(text, timestamptz, timestamptz) TO lossgate_app;
GRANT EXECUTE ON FUNCTION lossgate_heartbeat_job(bigint, text, timestamptz) TO lossgate_app;
