-- lossgate schema 6 (PostgreSQL): claiming takes the worker's credential.
--
-- Until now lossgate_app could execute lossgate_claim_job and lossgate_heartbeat_job,
-- so any application connection, whatever tenant it had set, could claim another
-- tenant's job and hold it for up to an hour. Workers are trusted, applications are
-- not: the two functions now belong to the NOLOGIN role lossgate_worker alone. It is a
-- member of lossgate_app, so a worker reads and writes tenants' rows under the same
-- row-level security as the application, and it does not see the queue across tenants
-- either: only the functions do (0005_queue_role.sql). A login can act as
-- lossgate_worker only if it was granted it (docs/roles.md).
--
-- Finishing a job stays a plain UPDATE under the tenant policy: it touches one row of
-- the tenant the transaction has set, which an application may already update (it
-- enqueues and cancels its own tenant's jobs).

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'lossgate_worker') THEN
        CREATE ROLE lossgate_worker NOLOGIN;
    END IF;
EXCEPTION
    -- Roles are cluster-wide; another database may be creating it right now.
    WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;

DO $$
BEGIN
    IF NOT pg_has_role('lossgate_worker', 'lossgate_app', 'MEMBER') THEN
        GRANT lossgate_app TO lossgate_worker;
    END IF;
EXCEPTION
    WHEN unique_violation THEN NULL;  -- the same grant, committed by another database's migration
END
$$;

DO $$
DECLARE
    granted boolean := NOT pg_has_role(current_user, 'lossgate_queue', 'MEMBER');
BEGIN
    -- Privileges on the functions are their owner's (lossgate_queue) to give. A migrating
    -- role that is not a superuser acts as the owner only while it is a member, so it
    -- becomes one for this moment, as in 0005. (Outside that window, 0005's REVOKE from
    -- PUBLIC was a silent no-op for such a role: PUBLIC could still claim.)
    IF granted THEN
        EXECUTE pg_catalog.format('GRANT lossgate_queue TO %I', current_user);
    END IF;
    REVOKE ALL ON FUNCTION lossgate_claim_job(text, timestamptz, timestamptz) FROM PUBLIC, lossgate_app;
    REVOKE ALL ON FUNCTION lossgate_heartbeat_job(bigint, text, timestamptz) FROM PUBLIC, lossgate_app;
    GRANT EXECUTE ON FUNCTION lossgate_claim_job(text, timestamptz, timestamptz) TO lossgate_worker;
    GRANT EXECUTE ON FUNCTION lossgate_heartbeat_job(bigint, text, timestamptz) TO lossgate_worker;
    IF granted THEN
        EXECUTE pg_catalog.format('REVOKE lossgate_queue FROM %I', current_user);
    END IF;
END
$$;
