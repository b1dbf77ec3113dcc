-- lossgate schema 7 (PostgreSQL): full-text search with the 'english' configuration
-- (Snowball stemming), like SQLite's Porter tokenizer since its schema 4, so a
-- question's "painted" finds a message's "paint", over the event's actor and text. The
-- event index is rebuilt lazily:
-- every subject's mark restarts at 0 and the next refresh (a consolidation, or a
-- recall that finds the backlog large) indexes the subject again.
TRUNCATE event_terms;
UPDATE clocks SET search_indexed_through = 0;
DROP INDEX facts_search;
CREATE INDEX facts_search ON facts USING gin (to_tsvector('english', coalesce(search_text, '')));
