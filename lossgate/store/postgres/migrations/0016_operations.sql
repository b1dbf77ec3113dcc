-- lossgate schema 16 (PostgreSQL): artifact states of operations (lossgate.ops):
-- 'quarantined' (taken out of recall by an operator), 'shadow' (a tenant's shadow
-- configuration built it: never published), 'review' (gated, waiting for a person) and
-- 'refused' (a person refused it: kept, never published, never compressor input).
ALTER TABLE artifacts DROP CONSTRAINT artifacts_state_check;
ALTER TABLE artifacts ADD CONSTRAINT artifacts_state_check
    CHECK (state IN ('candidate', 'published', 'retired', 'stale', 'failed', 'abandoned', 'quarantined', 'shadow',
                     'review', 'refused'));
