"""The superseded and revoked facts a consolidation reads to mark the lines that state one.

Every line of a summary that states a retired value carries lossgate's marker
(:mod:`lossgate.gate.superseded`). A long history retires thousands of values, and a job that
read them all would cost what the history holds. The store keeps each retired value's terms
(its phrase's first word, or its atoms) in the transaction that retires it, so that a job
extending its root (:mod:`lossgate.consolidate.tail`) reads only the retired facts that share
a term with what its summaries can say:

* the events it reads (their words, their atoms as its gate extracts them, and the lead of
  each line that quotes one);
* the lines it carries (the parent's digest lines, and the digests of the parts it reuses)
  that carry a marker. Such a job runs at its parent's epoch: nothing was retired since the
  parent was gated, and what is retired now is what was then, less what an active fact came
  to state; a carried line the parent's gate passed without a marker states none of it.

A compressor's line that states a retired value without quoting any of these would state an
atom none of its inputs holds, which the fence refuses (``atom_added``). Any other job reads
the whole snapshot already, and every retired fact with it; so does the first job of a
subject that retired values before the store kept their terms, which keeps them (the next
job reads what is new).
"""

from __future__ import annotations

from types import SimpleNamespace

from lossgate.consolidate.hierarchy import TreePlan
from lossgate.consolidate.selection import Selection
from lossgate.gate.sources import event_tokens
from lossgate.gate.superseded import has_marker, text_terms, value_terms
from lossgate.model.records import Fact, FactStatus
from lossgate.model.wording import event_line, one_line
from lossgate.store.protocol import WriteTx

__all__ = ["retired_facts"]

_RETIRED: tuple[FactStatus, ...] = ("superseded", "revoked")


def retired_facts(tx: WriteTx, sel: Selection, tree: TreePlan | None, *, bounded: bool) -> list[Fact]:
    """The subject's retired facts (through the selection's high-water) that the job's lines
    may state, with the facts their supersession chains lead through; all of them unless
    the job is ``bounded`` (it extends its root by its tail: ``tree`` is that job's) and the
    store keeps the subject's terms."""
    t, s = sel.snapshot.tenant_id, sel.snapshot.subject_id
    high_water = sel.snapshot.clock.high_water
    kept = tx.retired_terms_kept(t, s)
    if bounded and kept and tree is not None:
        return tx.retired_facts_stating(t, s, sorted(_terms(sel, tree)), through_seq=high_water)
    retired = tx.facts(t, s, statuses=list(_RETIRED))
    if not kept:
        tx.keep_retired_terms(t, s, {f.fact_id: value_terms(f) for f in retired})
    return [f for f in retired if f.seq <= high_water]


def _terms(sel: Selection, tree: TreePlan) -> frozenset[str]:
    """What the lines of a job extending its root can hold (the module's docstring says why)."""
    events = [e for e in sel.snapshot.events if e.text]
    carried = [
        *tree.carried_lines,
        *(line for job in tree.parts if job.reuse is not None for line in job.reuse.body.summary.split("\n")),
    ]
    read = [line for line in carried if has_marker(line)]
    # A quote's lead ("- user:"), and the whole quote where one_line changed the text (its
    # lines joined): the atoms a summary's line holds beyond its event's own.
    read += [
        event_line(SimpleNamespace(actor=actor, trust=trust, text=""))
        for actor, trust in sorted({(e.actor, e.trust) for e in events}, key=str)
    ]
    read += [event_line(e) for e in events if one_line(e.text or "") != e.text]
    return text_terms(read, words=[e.text or "" for e in events], tokens=event_tokens(events))
