"""Speed of the fidelity gate.

    python bench/bench_gate.py [--facts 1000] [--words 20000] [--runs 15]

Builds a deterministic workload: ``--facts`` typed facts (money, dates,
identifiers, negations, numbers, strings with qualifiers), each stated by a
source event, the events padded with agent chatter to ``--words`` words in all,
and the correct artifact (one claim per fact, a summary restating a fifth of the
values). It reports the median time of

* the fact contract over all facts (target: under 20 ms for 1,000 facts);
* the full gate (contract, lineage and conflicts, prose fact diff including the
  atom extraction of every source event);
* the atom extractor alone over the source text, as MB/s (target: over 1 MB/s);

and, as a same-run baseline that makes figures from different machines
comparable, the time to canonicalise and hash the same facts with
:func:`lossgate.model.canonical.content_hash`. Every step and the baseline run once per
round, alternately (A B A B ...), ``--runs`` rounds; each ratio is the median of
the per-round ratios to the baseline of the same round.

A second scenario gates one consolidation subject as ``bench_consolidation.py``
fills it (``--subject-events`` chat events of about 60 characters,
``--subject-facts`` facts; 0 skips it) with the deterministic compressor's
artifact, and reports the median of ``gate.check`` on the first run (the
process-wide cache of event atoms emptied before each run) and again (every
event's atoms cached, as for a retry, another worker or the next consolidation
of the subject), each as a ratio to the same-run time of extracting the atoms of
the same event text once (target: under 0.35 s again, on a quiet machine), the
three timed alternately, ``--subject-runs`` rounds.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import clocked, interleave, median, median_ratio
from lossgate.gate import check
from lossgate.gate.atoms import extract_atoms
from lossgate.gate.contract import check_contract
from lossgate.gate.integrity import check_integrity
from lossgate.gate.preserve import build_must_preserve
from lossgate.gate.prose import check_prose, prose_inputs
from lossgate.gate.sources import clear_atom_cache
from lossgate.model.canonical import content_hash
from lossgate.model.records import (
    ArtifactBody,
    Claim,
    Clock,
    Event,
    Fact,
    Snapshot,
    fact_hash_content,
)
from lossgate.model.registry import Registry, load_registry
from lossgate.model.values import canonical_value, coerce_value, encode_value

REGISTRY = Path(__file__).resolve().parents[1] / "lossgate" / "fixtures" / "gate" / "predicates.toml"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

CHATTER = (
    "Thanks for the update, I will take a look at it shortly.",
    "The team discussed the roadmap and agreed to revisit it next sprint.",
    "I appreciate your patience while we sort this out together.",
    "Let me know if anything else comes up during the review.",
    "We synced with finance and everything looks on track for now.",
)


def _statement(i: int, rng: random.Random) -> tuple[str, str, object, dict[str, str], str]:
    """(predicate, sentence, value, qualifiers, summary sentence) for fact number ``i``."""
    kind = i % 6
    if kind == 0:
        amount = rng.randrange(1_000, 90_000)
        inv = f"INV-{10_000 + i}"
        return (
            "invoice.total",
            f"Invoice {inv} totals ${amount:,}.",
            {"amount": str(amount), "currency": "USD"},
            {"invoice_id": inv},
            f"{inv} totals ${amount:,}.",
        )
    if kind == 1:
        day = T0.date() + timedelta(days=rng.randrange(10, 300))
        return (
            "project.deadline",
            f"Project P{i} is due {day.isoformat()}.",
            day.isoformat(),
            {"project": f"P{i}"},
            f"P{i} is due {day.isoformat()}.",
        )
    if kind == 2:
        ticket = f"TKT-{20_000 + i}"
        return ("ticket.id", f"The ticket for this is {ticket}.", ticket, {}, f"Ticket {ticket}.")
    if kind == 3:
        return (
            "contact.allowed",
            f"Do not contact them by channel {i}.",
            False,
            {"channel": f"channel {i}"},
            f"Do not contact them by channel {i}.",
        )
    if kind == 4:
        seats = rng.randrange(2, 500)
        return ("subscription.seats", f"Account {i} has {seats} seats.", seats, {}, f"Account {i}: {seats} seats.")
    name = rng.choice(["Jordan Lee", "Dana Whitfield", "Marcus Chen", "Priya Natarajan"])
    return ("customer.name", f"The contact person is {name}.", name, {}, f"Contact: {name}.")


def build_workload(*, facts: int = 1000, words: int = 20_000, seed: int = 7) -> tuple[Snapshot, ArtifactBody, Registry]:
    """A snapshot of ``facts`` facts over about ``words`` words of source, and its correct artifact."""
    rng = random.Random(seed)
    registry = load_registry(REGISTRY)
    t, s = "bench", "subject-1"
    events: list[Event] = []
    fact_rows: list[Fact] = []
    claims: list[Claim] = []
    summary: list[str] = []
    texts = [_statement(i, rng) for i in range(facts)]
    budget = max(words - sum(len(x[1].split()) for x in texts), 0)
    written = 0
    for i, (predicate, sentence, raw, quals, short) in enumerate(texts):
        filler: list[str] = []
        while written < budget * (i + 1) // facts:  # spread the chatter evenly over the events
            filler.append(rng.choice(CHATTER))
            written += len(filler[-1].split())
        text = " ".join([*filler, sentence])
        eid, fid = f"ev-{i}", f"fact-{i}"
        pred = registry.get(predicate)
        events.append(
            Event(
                tenant_id=t,
                subject_id=s,
                event_id=eid,
                seq=i + 1,
                kind="message",
                actor="user",
                trust="authenticated_user",
                text=text,
                payload={},
                occurred_at=T0 + timedelta(minutes=i),
                recorded_at=T0,
                content_hash=f"sha256:{i:064x}",
            )
        )
        value = coerce_value(pred.value_type, raw)
        quals_t = tuple(sorted(quals.items()))
        fact_rows.append(
            Fact(
                tenant_id=t,
                subject_id=s,
                fact_id=fid,
                seq=facts + i + 1,
                predicate=predicate,
                registry_version=1,
                value_type=pred.value_type,
                value=value,
                qualifiers=quals_t,
                source_event_ids=(eid,),
                recorded_at=T0,
                content_hash=f"sha256:{i:064x}",
            )
        )
        claims.append(
            Claim(
                fact_id=fid,
                tenant_id=t,
                subject_id=s,
                predicate=predicate,
                value_type=pred.value_type,
                value=encode_value(pred.value_type, value),
                qualifiers=quals_t,
                derived_from=(fid, eid),
            )
        )
        if i % 5 == 0:
            summary.append(short)
    snapshot = Snapshot(
        tenant_id=t,
        subject_id=s,
        registry_version=1,
        clock=Clock(tenant_id=t, subject_id=s, high_water=2 * facts),
        events=tuple(events),
        facts=tuple(fact_rows),
    )
    open_items = tuple(f.fact_id for f in fact_rows if registry.get(f.predicate).category == "obligation")
    artifact = ArtifactBody(
        tenant_id=t, subject_id=s, claims=tuple(claims), open_items=open_items, summary=" ".join(summary)
    )
    return snapshot, artifact, registry


def hash_facts(snapshot: Snapshot) -> None:
    """The baseline: canonicalise and hash every fact, as the ledger does on assert."""
    for f in snapshot.facts:
        content_hash(
            fact_hash_content(
                tenant_id=f.tenant_id,
                subject_id=f.subject_id,
                fact_id=f.fact_id,
                predicate=f.predicate,
                value_type=f.value_type,
                canonical=canonical_value(f.value_type, f.value),
                qualifiers=f.qualifiers,
                polarity=f.polarity,
                modality=f.modality,
                authority=f.authority,
                source_event_ids=f.source_event_ids,
                valid_from=f.valid_from,
                supersedes=f.supersedes,
            )
        )


def subject_workload(events: int, facts: int) -> tuple[Snapshot, ArtifactBody, Registry]:
    """One subject as ``bench_consolidation.py`` fills it, its snapshot as a consolidation
    selects it, and the deterministic compressor's artifact (default budget)."""
    from bench.bench_consolidation import T, _fill, _memory
    from lossgate.consolidate.compressor import CompressionRequest
    from lossgate.consolidate.deterministic import DeterministicCompressor
    from lossgate.consolidate.pipeline import ConsolidationConfig
    from lossgate.consolidate.selection import select

    with tempfile.TemporaryDirectory() as d:
        mem = _memory(Path(d) / "gate.db")
        try:
            _fill(mem, "c", events, facts)
            with mem.store.read() as tx:
                registry = mem.registries.current(tx)
                assert registry is not None
                sel = select(tx, T, "c", registry)
        finally:
            mem.close()
    request = CompressionRequest(
        tenant_id=T,
        subject_id="c",
        facts=sel.facts,
        events=sel.events,
        predicates={f.predicate: registry.get(f.predicate) for f in sel.facts},
        budget_tokens=ConsolidationConfig().budget_tokens,
    )
    artifact = ArtifactBody.model_validate(DeterministicCompressor().compress(request))
    return sel.snapshot, artifact, registry


def bench_subject(events: int, facts: int, runs: int) -> None:
    """The gate over one big consolidation subject, first run and again, against extracting its text once."""
    snapshot, artifact, registry = subject_workload(events, facts)
    texts = [e.text for e in snapshot.events if e.state == "valid" and e.text]
    source = "\n;\n".join(texts)  # the events joined as the gate extracts them (one day)
    ref = snapshot.events[0].occurred_at
    result = check(snapshot, artifact, registry)
    assert result.passed, result.lines()[:5]
    # Interleaved rounds: baseline, first run (cache emptied, untimed), again (cache warm).
    base, first, again = interleave(
        [
            clocked(lambda: extract_atoms(source, reference_time=ref)),
            clocked(lambda: check(snapshot, artifact, registry), setup=clear_atom_cache),
            clocked(lambda: check(snapshot, artifact, registry)),
        ],
        runs,
    )

    def row(label: str, times: list[float], note: str = "") -> None:
        print(f"{label:<46} {median(times) * 1000:9.2f} ms  {median_ratio(times, base):6.2f}x extraction  {note}")

    print(
        f"\nsubject: {len(texts):,} events ({len(source) / 1000:.0f} kB), {len(snapshot.facts)} facts; "
        f"outcome {result.outcome} ({len(result.losses):,} recorded losses); medians of {runs} interleaved rounds"
    )
    row("baseline: extract the event text's atoms once", base)
    row("gate, first run (no event atoms cached)", first)
    row("gate again (every event's atoms cached)", again, "target < 350 ms on a quiet machine")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--words", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--subject-events", type=int, default=10_000)
    parser.add_argument("--subject-facts", type=int, default=500)
    parser.add_argument("--subject-runs", type=int, default=5)
    args = parser.parse_args()

    snapshot, artifact, registry = build_workload(facts=args.facts, words=args.words)
    source = "\n".join(e.text or "" for e in snapshot.events)
    result = check(snapshot, artifact, registry)
    assert result.passed, result.lines()[:5]

    inputs = prose_inputs(snapshot)
    must = build_must_preserve(snapshot, registry)
    # Interleaved rounds (A B A B ...): the baseline, then every step once, in this order, so
    # each round's ratios compare times taken under the same load. The cache of event atoms is
    # emptied (untimed) before "sources" and "full"; "again" follows "full", so it is warm.
    names = ["base", "contract", "integrity", "sources", "diff", "full", "again", "extract"]
    times = dict(
        zip(
            names,
            interleave(
                [
                    clocked(lambda: hash_facts(snapshot)),
                    clocked(lambda: check_contract(snapshot, artifact)),
                    clocked(lambda: check_integrity(snapshot, artifact, registry)),
                    clocked(lambda: prose_inputs(snapshot), setup=clear_atom_cache),
                    clocked(lambda: check_prose(snapshot, artifact, must, inputs=inputs)),
                    clocked(lambda: check(snapshot, artifact, registry), setup=clear_atom_cache),
                    clocked(lambda: check(snapshot, artifact, registry)),
                    clocked(lambda: extract_atoms(source)),
                ],
                args.runs,
            ),
            strict=False,
        )
    )
    base = times["base"]
    extract = median(times["extract"])
    size_mb = len(source.encode()) / 1e6

    def row(label: str, name: str, note: str = "") -> None:
        t = times[name]
        print(f"{label:<46} {median(t) * 1000:9.2f} ms  {median_ratio(t, base):6.2f}x baseline  {note}")

    print(
        f"workload: {args.facts} facts, {len(source.split()):,} source words ({size_mb * 1000:.0f} kB), "
        f"{len(snapshot.events)} events; outcome {result.outcome} ({len(result.losses)} recorded losses); "
        f"medians of {args.runs} interleaved rounds, ratios the medians of per-round ratios"
    )
    row(f"baseline: canonicalise + hash {args.facts} facts", "base")
    row(f"fact contract over {args.facts} facts", "contract", "target < 20 ms")
    row("lineage, trust, open items, conflicts", "integrity")
    row("prose: extract the snapshot's atoms", "sources")
    row("prose: diff one artifact (atoms reused)", "diff")
    row("full gate (all of the above)", "full")
    row("full gate again (event atoms cached)", "again")
    row("atom extractor over the source text", "extract", f"{size_mb / extract:.2f} MB/s; target > 1 MB/s")
    if args.subject_events:
        bench_subject(args.subject_events, args.subject_facts, args.subject_runs)


if __name__ == "__main__":
    main()
