"""The read side: what an agent gets back for a subject, fresh summary or raw fallback,
with the record of what it got (:mod:`.read`), and the attestation that a recall is still
what memory says (:mod:`.attestation`)."""
