-- lossgate schema 17 (PostgreSQL): the HTTP service's API keys and idempotency records
-- (lossgate.access).
--
-- A key is bound to one tenant; the store keeps the sha256 of its secret (hex), never the
-- secret. Authentication must find a key before its tenant is known. Row-level security
-- shows a row of api_keys to a transaction in two cases only: its tenant is the one the
-- transaction has set (lossgate.tenant: listing, creating and revoking a tenant's keys),
-- or, for SELECT, its hash is the one the transaction names (lossgate.key_hash, which
-- only the store's api_key_by_hash sets). A transaction that does not know a secret sees
-- no key of another tenant. Once a key is found, the service passes its tenant to every
-- operation of the request, and each transaction sets that tenant: the tenant of the key
-- is the tenant row-level security sees. A custom setting set with is_local reads back as
-- '' after its transaction in the same session, hence key_hash <> ''.
CREATE TABLE api_keys (
    tenant_id  text COLLATE "C" NOT NULL,
    key_id     text COLLATE "C" NOT NULL,
    key_hash   text COLLATE "C" NOT NULL CHECK (key_hash <> ''),
    scopes     text NOT NULL,  -- space-separated, in the order read, write, admin
    name       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    revoked_at timestamptz,
    PRIMARY KEY (tenant_id, key_id)
);
CREATE UNIQUE INDEX api_keys_by_hash ON api_keys (key_hash);

ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_keys
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
CREATE POLICY key_lookup ON api_keys FOR SELECT
    USING (key_hash = current_setting('lossgate.key_hash', true));
GRANT SELECT, INSERT, UPDATE ON api_keys TO lossgate_app;

-- What the service answered to a request carrying an Idempotency-Key: the request's hash,
-- the status and the response body (ids, seqs and hashes: no event or fact content).
CREATE TABLE idempotency_keys (
    tenant_id       text COLLATE "C" NOT NULL,
    idempotency_key text COLLATE "C" NOT NULL,
    request_hash    text NOT NULL,
    status          integer NOT NULL,
    response        text NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, idempotency_key)
);

ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON idempotency_keys
    USING (tenant_id = current_setting('lossgate.tenant', true))
    WITH CHECK (tenant_id = current_setting('lossgate.tenant', true));
GRANT SELECT, INSERT ON idempotency_keys TO lossgate_app;
