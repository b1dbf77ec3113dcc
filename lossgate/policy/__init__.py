"""The policy consolidation and recall obey, set by an operator: a tenant's consolidation
configuration rolled out safely (live, shadow and human review: :mod:`.rollout`), and
quarantine, which takes a bad summary out of recall at once (:mod:`.quarantine`)."""
