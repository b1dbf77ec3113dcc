"""Hierarchical consolidation against one pass, on SQLite, timed alternately (A B A B ...).

    python bench/bench_hierarchy.py [--sessions 40] [--turns 25] [--repeat 5]

One subject of S sessions of T turns (numbers, dates and negations mixed in) and a fact
per session, consolidated

* **first**: hierarchically (a gated digest per session, then the root gated against the
  whole snapshot) against the same history consolidated in one pass (``mode="never"``,
  the direct path, default budget): the same selection and the same whole-snapshot gate,
  without the parts;
* **again after a tail append** of 5 turns to the last session: the hierarchy grows by its
  tail (the last part cut again, the root's new lines gated against what is new:
  :mod:`lossgate.consolidate.tail`), against one pass on the incremental path (the
  published parent plus the new turns, read without the history: ``select_delta``).

Each round uses fresh subjects for both sides. Also prints the published tokens of each
side (the hierarchy covers every session; one pass keeps the newest turns that fit).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lossgate
from bench._util import clocked, interleave, median, median_ratio
from lossgate.model.records import NewEvent, NewFact

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
T = "bench"
TALK = (
    "we met at the cafe and talked about the {k} plan for a while",
    "the invoice INV-{k} for {k}.50 USD is not paid yet",
    "my sister visits on {day} and stays {n} nights",
    "I never drink coffee after 5pm, it keeps me up",
    "the garden looks great after the rain this week",
)


def fill(mem: lossgate.Memory, subject: str, sessions: int, turns: int, *, start: int = 0) -> None:
    events = []
    for s in range(sessions):
        at = T0 + timedelta(days=7 * s)
        for i in range(start, start + turns):
            text = TALK[(s + i) % len(TALK)].format(k=s * 100 + i, n=i % 9 + 1, day=(at + timedelta(days=3)).date())
            events.append(
                NewEvent(
                    tenant_id=T,
                    subject_id=subject,
                    event_id=f"{subject}-s{s}-{i}",
                    actor="user",
                    text=text,
                    payload={"session": s + 1},
                    occurred_at=at + timedelta(minutes=i),
                )
            )
    mem.append(events)
    if start == 0:
        with mem.transaction() as led:
            led.assert_facts(
                [
                    NewFact(
                        tenant_id=T,
                        subject_id=subject,
                        fact_id=f"{subject}-f{s}",
                        predicate="chat.topic",
                        value=f"topic {s}",
                        source_event_ids=[f"{subject}-s{s}-0"],
                    )
                    for s in range(sessions)
                ]
            )


def main(argv: list[str] | None = None) -> int:
    from lossgate.consolidate.hierarchy import HierarchyConfig
    from lossgate.consolidate.pipeline import ConsolidationConfig
    from lossgate.consolidate.tokens import default_counter

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=40)
    ap.add_argument("--turns", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    tree = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always"))
    flat = ConsolidationConfig(hierarchy=HierarchyConfig(mode="never"))
    count = default_counter()
    with tempfile.TemporaryDirectory() as d:
        mem = lossgate.open(f"sqlite:///{Path(d) / 'hierarchy.db'}")
        mem.admin.load_predicates(ROOT / "examples" / "predicates.toml")
        fill(mem, "warm", 2, 5)
        mem.consolidate(T, "warm", config=tree)  # untimed: first-use costs (the tokenizer)
        rounds = iter(range(10**6))
        names: dict[str, str] = {}

        def new_subjects() -> None:
            n = next(rounds)
            names.update(tree=f"t{n}", flat=f"f{n}")
            fill(mem, names["tree"], args.sessions, args.turns)
            fill(mem, names["flat"], args.sessions, args.turns)

        def consolidate(side: str, config: ConsolidationConfig) -> None:
            attempt = mem.consolidate(T, names[side], config=config)
            assert attempt.status == "published", (attempt.status, attempt.violations, attempt.error)

        def append_tail() -> None:
            for side in ("tree", "flat"):
                events = [
                    NewEvent(
                        tenant_id=T,
                        subject_id=names[side],
                        event_id=f"{names[side]}-tail-{i}",
                        actor="user",
                        text=f"one more thing about plan {i}, not urgent",
                        payload={"session": args.sessions},
                        occurred_at=T0 + timedelta(days=7 * (args.sessions - 1), hours=5, minutes=i),
                    )
                    for i in range(5)
                ]
                mem.append(events)

        first_tree, first_flat, again_tree, again_flat = interleave(
            [
                clocked(lambda: consolidate("tree", tree), setup=new_subjects),
                clocked(lambda: consolidate("flat", flat)),
                clocked(lambda: consolidate("tree", tree), setup=append_tail),
                clocked(lambda: consolidate("flat", flat)),
            ],
            args.repeat,
        )
        raw = sum(count(f"- {e.actor}: {e.text}") for e in mem.events(T, names["tree"]))
        tokens = {side: count(mem.recall(T, names[side]).summary or "") for side in ("tree", "flat")}
        mem.close()
    n = args.sessions * args.turns
    print(f"{args.sessions} sessions x {args.turns} turns ({n} events), {args.repeat} rounds, medians:")
    print(
        f"  first consolidation   hierarchy {median(first_tree) * 1000:8.1f} ms   one pass {median(first_flat) * 1000:8.1f} ms"
        f"   ratio {median_ratio(first_tree, first_flat):.2f}"
    )
    print(
        f"  after a tail append   hierarchy {median(again_tree) * 1000:8.1f} ms   one pass {median(again_flat) * 1000:8.1f} ms"
        f"   ratio {median_ratio(again_tree, again_flat):.2f}"
    )
    print(
        f"  published tokens      hierarchy {tokens['tree']:8d}      one pass {tokens['flat']:8d}      "
        f"raw history {raw} tokens"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
