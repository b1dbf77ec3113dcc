-- lossgate schema 1: the raw layer and the fact ledger.
CREATE TABLE registries (
    version      INTEGER PRIMARY KEY,
    content_hash TEXT NOT NULL,
    document     TEXT NOT NULL,
    loaded_at    TEXT NOT NULL
);

CREATE TABLE clocks (
    tenant_id   TEXT NOT NULL,
    subject_id  TEXT NOT NULL,
    high_water  INTEGER NOT NULL DEFAULT 0,
    input_epoch INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, subject_id)
) WITHOUT ROWID;

CREATE TABLE events (
    tenant_id    TEXT NOT NULL,
    subject_id   TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    event_id     TEXT NOT NULL,
    kind         TEXT NOT NULL,
    actor        TEXT NOT NULL,
    trust        TEXT NOT NULL,
    text         TEXT,
    payload      TEXT,
    occurred_at  TEXT NOT NULL,
    recorded_at  TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    state        TEXT NOT NULL DEFAULT 'valid' CHECK (state IN ('valid', 'revoked', 'deleted')),
    tier         TEXT NOT NULL DEFAULT 'hot' CHECK (tier IN ('hot', 'cold')),
    PRIMARY KEY (tenant_id, subject_id, seq),
    UNIQUE (tenant_id, event_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);

CREATE TABLE facts (
    tenant_id        TEXT NOT NULL,
    subject_id       TEXT NOT NULL,
    fact_id          TEXT NOT NULL,
    seq              INTEGER NOT NULL,
    predicate        TEXT NOT NULL,
    registry_version INTEGER NOT NULL,
    value_type       TEXT NOT NULL,
    value            TEXT,
    qualifiers       TEXT,
    polarity         TEXT NOT NULL,
    modality         TEXT NOT NULL,
    authority        TEXT NOT NULL,
    source_event_ids TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'active'
                     CHECK (status IN ('active', 'superseded', 'deleted', 'revoked')),
    supersedes       TEXT,
    superseded_by    TEXT,
    valid_from       TEXT,
    recorded_at      TEXT NOT NULL,
    content_hash     TEXT NOT NULL,
    PRIMARY KEY (tenant_id, fact_id),
    FOREIGN KEY (tenant_id, subject_id) REFERENCES clocks (tenant_id, subject_id)
);
CREATE INDEX facts_by_subject ON facts (tenant_id, subject_id, status, predicate);
CREATE INDEX facts_by_seq ON facts (tenant_id, subject_id, seq);

CREATE TABLE fact_sources (
    tenant_id  TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    fact_id    TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    PRIMARY KEY (tenant_id, fact_id, event_id),
    FOREIGN KEY (tenant_id, fact_id) REFERENCES facts (tenant_id, fact_id),
    FOREIGN KEY (tenant_id, event_id) REFERENCES events (tenant_id, event_id)
) WITHOUT ROWID;
CREATE INDEX fact_sources_by_event ON fact_sources (tenant_id, subject_id, event_id);

CREATE TABLE conflicts (
    tenant_id   TEXT NOT NULL,
    subject_id  TEXT NOT NULL,
    conflict_id TEXT NOT NULL,
    predicate   TEXT NOT NULL,
    fact_a      TEXT NOT NULL,
    fact_b      TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'unresolved' CHECK (status IN ('unresolved', 'resolved')),
    detected_at TEXT NOT NULL,
    resolved_at TEXT,
    resolution  TEXT,
    PRIMARY KEY (tenant_id, conflict_id),
    FOREIGN KEY (tenant_id, fact_a) REFERENCES facts (tenant_id, fact_id),
    FOREIGN KEY (tenant_id, fact_b) REFERENCES facts (tenant_id, fact_id)
);
CREATE INDEX conflicts_by_subject ON conflicts (tenant_id, subject_id, status);

CREATE TABLE ledger_log (
    entry_id   INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    at         TEXT NOT NULL,
    op         TEXT NOT NULL,
    target_id  TEXT NOT NULL,
    detail     TEXT NOT NULL
);
CREATE INDEX ledger_log_by_subject ON ledger_log (tenant_id, subject_id, target_id);
