-- lossgate schema 13 (PostgreSQL): what demotion may move, found through an index
-- (lossgate.tiers). The valid events of a subject in a tier, by recorded_at: demotion
-- reads the hot events recorded before the dormancy cutoff and the warm ones before the
-- cold horizon, and asks for the oldest of each tier to learn that nothing is due, so its
-- cost follows what it moves, not the subject's history. Partial: revoked and deleted
-- events never move, and would otherwise stay in every range read for ever.
--
-- A plain CREATE INDEX (migrations run in one transaction, where CONCURRENTLY cannot):
-- it blocks writes to events while it builds, a scan of the table.
CREATE INDEX events_by_tier ON events (tenant_id, subject_id, tier, recorded_at) WHERE state = 'valid';
