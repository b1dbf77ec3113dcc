"""What is derived from what: lineage edges and stale propagation when an input changes
(:mod:`.propagation`), the rebuild queue's policy (:mod:`.queue`), and the response
boundary's records, which lineage redacts with their inputs (:mod:`.responses`)."""
