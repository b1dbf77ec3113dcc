-- lossgate schema 12: quarantine (lossgate.ops.quarantine). An operator takes a published
-- artifact out of recall: its state becomes 'quarantined'. The CHECK on artifacts.state
-- widens in place, as schema 8 widened events.tier (every stored row stays valid); the
-- CREATE TABLE below moves the schema cookie so that other connections reload the schema.
PRAGMA writable_schema=ON;
UPDATE sqlite_master SET sql = replace(sql,
    'CHECK (state IN (''candidate'', ''published'', ''retired'', ''stale'', ''failed'', ''abandoned''))',
    'CHECK (state IN (''candidate'', ''published'', ''retired'', ''stale'', ''failed'', ''abandoned'', ''quarantined''))')
WHERE type = 'table' AND name = 'artifacts';
PRAGMA writable_schema=RESET;
CREATE TABLE schema_cookie_12 (x INTEGER);
DROP TABLE schema_cookie_12;
