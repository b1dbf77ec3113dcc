-- lossgate schema 13: the HTTP service's API keys and idempotency records (lossgate.access).
--
-- A key is bound to one tenant; the store keeps the sha256 of its secret (hex), never the
-- secret. Authentication looks a key up by that hash before its tenant is known, hence
-- the unique index on key_hash alone; everything else is keyed tenant first. A revoked
-- key keeps its row (revoked_at) for audit.
CREATE TABLE api_keys (
    tenant_id  TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    key_hash   TEXT NOT NULL CHECK (key_hash <> ''),
    scopes     TEXT NOT NULL,  -- space-separated, in the order read, write, admin
    name       TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    PRIMARY KEY (tenant_id, key_id)
);
CREATE UNIQUE INDEX api_keys_by_hash ON api_keys (key_hash);

-- What the service answered to a request carrying an Idempotency-Key: the request's hash,
-- the status and the response body (ids, seqs and hashes: no event or fact content).
CREATE TABLE idempotency_keys (
    tenant_id       TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    status          INTEGER NOT NULL,
    response        TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, idempotency_key)
);
