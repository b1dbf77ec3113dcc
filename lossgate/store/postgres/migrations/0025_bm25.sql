-- lossgate schema 25 (PostgreSQL): search ranks by BM25, as SQLite's FTS5 does
-- (lossgate.store.core.ranking.bm25_order). ts_rank has no inverse document frequency: a
-- word in every event counted as much as a rare one. lossgate_event_term_stats returns, for
-- a subject's newest valid indexed events matching one term (at most p_cap of them, read as
-- lossgate_event_probe reads them, schema 23), the term's frequency in each (the positions of
-- its lexeme; for an identifier's phrase, those of its rarest piece) and the event's length
-- (its lexemes' positions): what BM25 needs besides the subject's event count, read from the
-- query's terms only. Owned by lossgate_search, search_path pinned, like the other search
-- functions (schemas 18 and 23): it keeps the caller's tenant and returns numbers only.
-- Each match's state is read by the events' primary key, in a scalar subquery: written as
-- an EXISTS with "state = 'valid'" the planner, without fresh statistics, took the partial
-- index of valid events by tier and filtered every row of the subject for each match (a
-- 20,000-event subject searched in seconds). lossgate_event_probe (schema 23), which reads
-- matches the same way, is no longer called.
DO $$
DECLARE
    granted boolean := NOT pg_has_role(current_user, 'lossgate_search', 'MEMBER');
BEGIN
    EXECUTE pg_catalog.format($f$
        CREATE FUNCTION lossgate_event_term_stats(p_subject text, p_query text, p_cap integer)
        RETURNS TABLE (seq bigint, tf integer, dl integer) LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = %I, pg_temp SET plan_cache_mode = force_custom_plan AS $body$
        DECLARE
            v_lexemes text[] := tsvector_to_array(to_tsvector('english', p_query));
        BEGIN
            RETURN QUERY
            SELECT m.seq, s.f, s.l FROM (
                SELECT x.seq, x.terms FROM event_terms x
                WHERE x.tenant_id = current_setting('lossgate.tenant', true) AND x.subject_id = p_subject
                  AND x.terms @@ websearch_to_tsquery('english', p_query)
                  AND (SELECT e.state FROM events e WHERE e.tenant_id = x.tenant_id AND e.subject_id = x.subject_id
                       AND e.seq = x.seq) = 'valid'
                ORDER BY x.seq DESC LIMIT p_cap) m
            CROSS JOIN LATERAL (
                SELECT coalesce(min(u.n) FILTER (WHERE u.lexeme = ANY (v_lexemes)), 1)::integer AS f,
                       coalesce(sum(u.n), 1)::integer AS l
                FROM (SELECT t.lexeme, coalesce(array_length(t.positions, 1), 1) AS n FROM unnest(m.terms) t) u) s;
        END
        $body$ $f$, current_schema());
    IF granted THEN
        EXECUTE pg_catalog.format('GRANT lossgate_search TO %I', current_user);
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE, CREATE ON SCHEMA %I TO lossgate_search', current_schema());
    ALTER FUNCTION lossgate_event_term_stats(text, text, integer) OWNER TO lossgate_search;
    EXECUTE pg_catalog.format('REVOKE CREATE ON SCHEMA %I FROM lossgate_search', current_schema());
    REVOKE ALL ON FUNCTION lossgate_event_term_stats(text, text, integer) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION lossgate_event_term_stats(text, text, integer) TO lossgate_app;
    IF granted THEN
        EXECUTE pg_catalog.format('REVOKE lossgate_search FROM %I', current_user);
    END IF;
END
$$;
