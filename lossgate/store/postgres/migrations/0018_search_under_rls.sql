-- lossgate schema 18 (PostgreSQL): full-text search through its GIN indexes under
-- row-level security; the fact index holds active facts only.
--
-- Row-level security applies a table's policy before any condition that is not
-- LEAKPROOF, and the text-search match (tsvector @@ tsquery) is not. So under
-- lossgate_app's tenant policy the planner could use neither event_terms_search nor
-- facts_search: every search scanned all of event_terms (every event of every subject
-- of every tenant) and matched each row after the policy (23 ms at 100,000 events;
-- 0.9 ms through the index). Marking the match LEAKPROOF would take a superuser and
-- change it for the whole cluster.
--
-- Instead the match runs in two SECURITY DEFINER functions owned by the NOLOGIN role
-- lossgate_search, which reads the columns a search needs of event_terms and facts under
-- a policy of its own that holds every row: there the match is an index condition. Each
-- function keeps the tenant the caller's transaction has set (current_setting
-- 'lossgate.tenant', as the tenant policy does: none set, nothing found) and the subject
-- it is given, and returns positions and ranks, never text. lossgate_app (and so
-- lossgate_worker) may execute them; nobody logs in as lossgate_search.
--
-- facts_search indexed every fact ever asserted; a search only ever wants active ones,
-- and superseded values pile up with a subject's history. It is replaced by a partial
-- index of the active facts.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'lossgate_search') THEN
        CREATE ROLE lossgate_search NOLOGIN;
    END IF;
EXCEPTION
    -- Roles are cluster-wide; another database may be creating it right now.
    WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;

GRANT SELECT (tenant_id, subject_id, seq, terms) ON event_terms TO lossgate_search;
GRANT SELECT (tenant_id, subject_id, fact_id, seq, status, search_text) ON facts TO lossgate_search;
CREATE POLICY search_reads ON event_terms FOR SELECT TO lossgate_search USING (true);
CREATE POLICY search_reads ON facts FOR SELECT TO lossgate_search USING (true);

DROP INDEX facts_search;
CREATE INDEX facts_search ON facts USING gin (to_tsvector('english', coalesce(search_text, '')))
    WITH (fastupdate = off) WHERE status = 'active';

DO $$
DECLARE
    granted boolean := NOT pg_has_role(current_user, 'lossgate_search', 'MEMBER');
BEGIN
    -- search_path pinned to this schema (then pg_temp): a caller cannot substitute its
    -- own tables inside a SECURITY DEFINER function.
    -- PL/pgSQL, not SQL: a SQL function's body is parsed and planned again at every call
    -- (1.0 ms a search at 100,000 events, against 0.35 ms). Custom plans always: a generic
    -- plan, not knowing which subject, may price one subject as a few rows and walk its
    -- events by primary key instead of the index.
    EXECUTE pg_catalog.format($f$
        CREATE FUNCTION lossgate_event_hits(p_subject text, p_query text)
        RETURNS TABLE (seq bigint, rank real) LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = %I, pg_temp SET plan_cache_mode = force_custom_plan AS $body$
        BEGIN
            RETURN QUERY
            SELECT x.seq, ts_rank(x.terms, websearch_to_tsquery('english', p_query)) FROM event_terms x
            WHERE x.tenant_id = current_setting('lossgate.tenant', true) AND x.subject_id = p_subject
              AND x.terms @@ websearch_to_tsquery('english', p_query);
        END
        $body$ $f$, current_schema());
    EXECUTE pg_catalog.format($f$
        CREATE FUNCTION lossgate_fact_hits(p_subject text, p_query text)
        RETURNS TABLE (fact_id text, seq bigint, rank real) LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = %I, pg_temp SET plan_cache_mode = force_custom_plan AS $body$
        BEGIN
            RETURN QUERY
            SELECT f.fact_id::text, f.seq,
                   ts_rank(to_tsvector('english', coalesce(f.search_text, '')), websearch_to_tsquery('english', p_query))
            FROM facts f
            WHERE f.tenant_id = current_setting('lossgate.tenant', true) AND f.subject_id = p_subject
              AND f.status = 'active'
              AND to_tsvector('english', coalesce(f.search_text, '')) @@ websearch_to_tsquery('english', p_query);
        END
        $body$ $f$, current_schema());

    -- Hand the functions to lossgate_search, as 0005 hands the queue's to lossgate_queue:
    -- membership and CREATE on this schema only for this moment.
    IF granted THEN
        EXECUTE pg_catalog.format('GRANT lossgate_search TO %I', current_user);
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE, CREATE ON SCHEMA %I TO lossgate_search', current_schema());
    ALTER FUNCTION lossgate_event_hits(text, text) OWNER TO lossgate_search;
    ALTER FUNCTION lossgate_fact_hits(text, text) OWNER TO lossgate_search;
    EXECUTE pg_catalog.format('REVOKE CREATE ON SCHEMA %I FROM lossgate_search', current_schema());
    REVOKE ALL ON FUNCTION lossgate_event_hits(text, text) FROM PUBLIC;
    REVOKE ALL ON FUNCTION lossgate_fact_hits(text, text) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION lossgate_event_hits(text, text) TO lossgate_app;
    GRANT EXECUTE ON FUNCTION lossgate_fact_hits(text, text) TO lossgate_app;
    IF granted THEN
        EXECUTE pg_catalog.format('REVOKE lossgate_search FROM %I', current_user);
    END IF;
END
$$;
