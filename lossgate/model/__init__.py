"""What lossgate speaks in: the typed records of the raw layer, the ledger and the derived
layer, fact values, canonical JSON and content hashes, input limits, instants, the
predicate registry (with its overlay and the starter registry), and the wording of facts
and events as text. It imports nothing of lossgate but :mod:`lossgate.errors`."""
