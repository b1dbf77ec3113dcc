-- lossgate schema 19 (PostgreSQL): what is indexed for search has the punctuation that
-- glues words into one token of the 'english' parser replaced by spaces
-- (lossgate.search_terms.SEARCH_SEPARATORS: @ . / - : _ + ~ # & = ?). The parser kept an
-- e-mail address, a host, a URL or file path and a signed number as one token, while a
-- query's words are split at punctuation: "bob" never found "bob@example.com", nor "2041"
-- "INV-2041". SQLite's tokenizer splits at every punctuation mark and needs no change.
--
-- Facts keep their search text in a column: it is rewritten here (new facts are written
-- so by the store). The event index is rebuilt lazily, as schema 7 rebuilt it: every
-- subject's mark restarts at 0 and the next refresh (a consolidation, or a recall that
-- finds the backlog large) indexes the subject again; until then a search matches the
-- events past the mark on their text, through the same expression.
--
-- The tenant policies are forced, so they bind the owner that runs this migration too
-- (unless it is a superuser): each rewrite lifts the forcing of its own table for this
-- transaction only, and every tenant's rows are rewritten.
ALTER TABLE facts NO FORCE ROW LEVEL SECURITY;
UPDATE facts SET search_text = translate(search_text, '@./-:_+~#&=?', '            ')
    WHERE search_text IS NOT NULL;
ALTER TABLE facts FORCE ROW LEVEL SECURITY;
TRUNCATE event_terms;
ALTER TABLE clocks NO FORCE ROW LEVEL SECURITY;
UPDATE clocks SET search_indexed_through = 0;
ALTER TABLE clocks FORCE ROW LEVEL SECURITY;
