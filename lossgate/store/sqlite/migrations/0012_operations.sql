-- lossgate schema 12: artifact states of operations (lossgate.ops). 'quarantined': an
-- operator took a published artifact out of recall. 'shadow': built, gated and stored by a
-- tenant's shadow configuration, never published. 'review': gated, waiting for a person
-- to approve it (then published through the same compare-and-swap) or to refuse it
-- ('refused': kept, never published, never compressor input). The CHECK on
-- artifacts.state widens in place, as schema 8 widened events.tier (every stored row
-- stays valid); the CREATE TABLE below moves the schema cookie so that other connections
-- reload the schema.
PRAGMA writable_schema=ON;
UPDATE sqlite_master SET sql = replace(sql,
    'CHECK (state IN (''candidate'', ''published'', ''retired'', ''stale'', ''failed'', ''abandoned''))',
    'CHECK (state IN (''candidate'', ''published'', ''retired'', ''stale'', ''failed'', ''abandoned'', '
    || '''quarantined'', ''shadow'', ''review'', ''refused''))')
WHERE type = 'table' AND name = 'artifacts';
PRAGMA writable_schema=RESET;
CREATE TABLE schema_cookie_12 (x INTEGER);
DROP TABLE schema_cookie_12;
