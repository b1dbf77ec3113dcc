"""What both SQL engines share, written once: the primitives that are the same after
dialect normalisation (:mod:`.tx`: the ledger tier; :mod:`.derived`: the derived,
queue and search tiers; :mod:`.taint` and :mod:`.metrics`: taint policies and daily
metrics), the dialect (:mod:`.dialect`), the transaction base with its
subject-scoping choke point (:mod:`.base`), the migration loader (:mod:`.migrations`)
and the store's migration step (:mod:`.store`). Each engine's own code is in
``lossgate/store/sqlite/`` and ``lossgate/store/postgres/``, laid out alike."""
