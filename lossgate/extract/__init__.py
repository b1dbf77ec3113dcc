"""Facts proposed from raw events: ``Memory.extract``, ``lossgate extract``.

An :class:`Extractor` reads a subject's valid events and proposes typed facts
(:class:`Candidate`). :func:`extract` turns candidates into :class:`~lossgate.model.records.Proposal`
records under the predicate registry, in one transaction:

* a candidate naming a predicate the registry lacks, or a value of the wrong type, is
  **refused** and recorded (never guessed);
* its authority is bounded by the trust of its sources: the weakest source decides, so an
  untrusted source never yields a user's fact (untrusted text is proposed as ``quoted``);
* a value an active fact already states is **known**;
* otherwise the predicate's policy decides (registry ``extraction``): ``auto`` asserts it
  at once (**accepted**, or **conflict** when it disagrees with an active fact: the ledger
  opens a conflict, it never silently supersedes), ``review`` keeps it for a person
  (:meth:`lossgate.Admin.accept_proposal`, :meth:`~lossgate.Admin.reject_proposal`).

Only the authorized view is read: events deleted or revoked are never sent to an
extractor, and an event deleted while an extractor reads it is dropped from its
candidates. The events are read once: the subject's clock records how far. Proposals
are kept with their outcome; deleting a source event purges the value of every proposal
drawn from it.

The default extractor, :class:`AtomExtractor`, needs no model: it proposes the
loss-intolerant values (amounts with their currency, dates, identifiers, counts) of
sentences that name a predicate by one of its registry ``cues``. :class:`ModelExtractor`
asks a model over chat completions (configured like the judge, apart from the compressor).
"""

from lossgate.extract.cues import AtomExtractor, Candidate, Extractor
from lossgate.extract.flow import accept_proposal, extract, reject_proposal
from lossgate.extract.model_extractor import ExtractionError, ModelExtractor

__all__ = [
    "AtomExtractor",
    "Candidate",
    "ExtractionError",
    "Extractor",
    "ModelExtractor",
    "accept_proposal",
    "extract",
    "reject_proposal",
]
