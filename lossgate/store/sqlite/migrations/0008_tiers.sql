-- lossgate schema 8: tiers with a clock of their own (lossgate.tiers). An event is hot
-- (raw and recent), warm (dormant, covered by a gated published summary) or cold (past
-- the second horizon: raw, still searched). The CHECK on events.tier widens in place: the
-- documented procedure for a change that leaves every stored row valid (sqlite.org,
-- "ALTER TABLE", making other kinds of table schema changes); the CREATE TABLE below
-- moves the schema cookie, so every other connection reloads the schema (RESET reloads
-- this one).
PRAGMA writable_schema=ON;
UPDATE sqlite_master SET sql = replace(sql, 'CHECK (tier IN (''hot'', ''cold''))',
                                       'CHECK (tier IN (''hot'', ''warm'', ''cold''))')
WHERE type = 'table' AND name = 'events';
PRAGMA writable_schema=RESET;

-- A tenant's settings (today: its tier policy), one JSON record per tenant.
CREATE TABLE tenant_settings (
    tenant_id  TEXT NOT NULL PRIMARY KEY,
    updated_at TEXT NOT NULL,
    record     TEXT NOT NULL
);
