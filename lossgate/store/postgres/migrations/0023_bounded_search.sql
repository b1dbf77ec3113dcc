-- lossgate schema 23 (PostgreSQL): a search reads a bounded share of a common word's
-- matches (lossgate.store.core.ranking). lossgate_event_probe returns the positions of a
-- subject's newest valid indexed events matching a query, at most p_cap of them. With
-- table statistics the planner reads a rare term's few matches through event_terms_search
-- and a term in most events by walking the subject's newest rows backwards until p_cap
-- match: either way about p_cap rows, never every event that says "the". A revoked event
-- keeps its terms (its text stays, for audit): the probe reads each match's state, so that
-- revoked events never take the place of valid ones (lossgate_search may read that column
-- of events, under a policy of its own, as it reads event_terms).
GRANT SELECT (tenant_id, subject_id, seq, state) ON events TO lossgate_search;
CREATE POLICY search_reads ON events FOR SELECT TO lossgate_search USING (true);

DO $$
DECLARE
    granted boolean := NOT pg_has_role(current_user, 'lossgate_search', 'MEMBER');
BEGIN
    -- As lossgate_event_hits (schema 18): owned by lossgate_search, search_path pinned,
    -- PL/pgSQL, custom plans (the term decides the plan).
    EXECUTE pg_catalog.format($f$
        CREATE FUNCTION lossgate_event_probe(p_subject text, p_query text, p_cap integer)
        RETURNS TABLE (seq bigint) LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = %I, pg_temp SET plan_cache_mode = force_custom_plan AS $body$
        BEGIN
            RETURN QUERY
            SELECT x.seq FROM event_terms x
            WHERE x.tenant_id = current_setting('lossgate.tenant', true) AND x.subject_id = p_subject
              AND x.terms @@ websearch_to_tsquery('english', p_query)
              AND EXISTS (SELECT 1 FROM events e WHERE e.tenant_id = x.tenant_id AND e.subject_id = x.subject_id
                          AND e.seq = x.seq AND e.state = 'valid')
            ORDER BY x.seq DESC LIMIT p_cap;
        END
        $body$ $f$, current_schema());
    IF granted THEN
        EXECUTE pg_catalog.format('GRANT lossgate_search TO %I', current_user);
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE, CREATE ON SCHEMA %I TO lossgate_search', current_schema());
    ALTER FUNCTION lossgate_event_probe(text, text, integer) OWNER TO lossgate_search;
    EXECUTE pg_catalog.format('REVOKE CREATE ON SCHEMA %I FROM lossgate_search', current_schema());
    REVOKE ALL ON FUNCTION lossgate_event_probe(text, text, integer) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION lossgate_event_probe(text, text, integer) TO lossgate_app;
    IF granted THEN
        EXECUTE pg_catalog.format('REVOKE lossgate_search FROM %I', current_user);
    END IF;
END
$$;
