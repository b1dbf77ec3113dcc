"""The raw layer's and the fact ledger's lifecycle: appends, assertions, supersession,
revocation and deletion (:mod:`.lifecycle`), retention and expiry (:mod:`.retention`), and
the hot, warm and cold tiers of events (:mod:`.tiers`)."""
