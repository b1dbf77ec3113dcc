-- lossgate schema 27 (PostgreSQL): lossgate_event_term_stats (schema 25) reads a common
-- term's newest matches by walking the subject's newest rows again. Written as one statement
-- with the match's state checked in a scalar subquery, the planner read that check as
-- selective (it guesses one row in two hundred), so for a word in nearly every event it
-- expected fewer matches than the limit, took every match through the GIN index and sorted
-- them: 93,000 matches and as many state look-ups for one word of a 100,000-event subject
-- (0.35 s, and the just-in-time compiler, called by that cost estimate, 0.08 s more). Now
-- the newest matches are read first, with no filter the planner can misjudge: a common
-- term's by the subject's rows newest first, a rare term's through the GIN index, as the
-- planner's own estimate of each term's matches says. Their states are read by primary key
-- after the limit; if revoked or deleted events left fewer than p_cap valid ones among
-- them, it reads four times as many, until enough are valid or there are no more. The
-- function never asks for the just-in-time compiler (an OLTP read of at most a few thousand
-- rows). Same signature, owner and grants: CREATE OR REPLACE keeps them.
DO $$
DECLARE
    granted boolean := NOT pg_has_role(current_user, 'lossgate_search', 'MEMBER');
BEGIN
    IF granted THEN  -- replacing a function takes its owner's role, as schema 25 took it to own it
        EXECUTE pg_catalog.format('GRANT lossgate_search TO %I', current_user);
    END IF;
    EXECUTE pg_catalog.format($f$
        CREATE OR REPLACE FUNCTION lossgate_event_term_stats(p_subject text, p_query text, p_cap integer)
        RETURNS TABLE (seq bigint, tf integer, dl integer) LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = %I, pg_temp SET plan_cache_mode = force_custom_plan SET jit = off AS $body$
        DECLARE
            v_lexemes text[] := tsvector_to_array(to_tsvector('english', p_query));
            v_tenant text := current_setting('lossgate.tenant', true);
            v_read integer := greatest(p_cap, 1);
            v_valid bigint[];
            v_matched integer;
        BEGIN
            LOOP
                SELECT coalesce(array_agg(y.seq ORDER BY y.seq DESC) FILTER (WHERE y.state = 'valid'), '{}'),
                       count(*)
                INTO v_valid, v_matched
                FROM (
                    SELECT x.seq, (SELECT e.state FROM events e WHERE e.tenant_id = v_tenant
                                   AND e.subject_id = p_subject AND e.seq = x.seq) AS state
                    FROM (SELECT t.seq FROM event_terms t
                          WHERE t.tenant_id = v_tenant AND t.subject_id = p_subject
                            AND t.terms @@ websearch_to_tsquery('english', p_query)
                          ORDER BY t.seq DESC LIMIT v_read) x) y;
                EXIT WHEN cardinality(v_valid) >= p_cap OR v_matched < v_read;
                v_read := v_read * 4;
            END LOOP;
            RETURN QUERY
            SELECT m.seq, s.f, s.l FROM (
                SELECT x.seq, x.terms FROM event_terms x
                WHERE x.tenant_id = v_tenant AND x.subject_id = p_subject AND x.seq = ANY (v_valid[1:p_cap])) m
            CROSS JOIN LATERAL (
                SELECT coalesce(min(u.n) FILTER (WHERE u.lexeme = ANY (v_lexemes)), 1)::integer AS f,
                       coalesce(sum(u.n), 1)::integer AS l
                FROM (SELECT t.lexeme, coalesce(array_length(t.positions, 1), 1) AS n FROM unnest(m.terms) t) u) s
            ORDER BY m.seq DESC;
        END
        $body$ $f$, current_schema());
    IF granted THEN
        EXECUTE pg_catalog.format('REVOKE lossgate_search FROM %I', current_user);
    END IF;
END
$$;
