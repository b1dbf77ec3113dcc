-- lossgate schema 16 (PostgreSQL): quarantine (lossgate.ops.quarantine). An operator takes
-- a published artifact out of recall: its state becomes 'quarantined'.
ALTER TABLE artifacts DROP CONSTRAINT artifacts_state_check;
ALTER TABLE artifacts ADD CONSTRAINT artifacts_state_check
    CHECK (state IN ('candidate', 'published', 'retired', 'stale', 'failed', 'abandoned', 'quarantined'));
