"""The Python facade: :class:`~lossgate.api.memory.Memory` (what :func:`lossgate.open`
returns), one tenant's view of it (:mod:`.tenancy`), and JSON Lines ingest (:mod:`.ingest`)."""
