"""Throughput of the prose atom extractor.

    python bench/bench_atoms.py [--words 20000] [--runs 15] [--seed 7]
                                [--facts 0.35] [--file TEXT] [--optional]

Generates a deterministic synthetic agent conversation (chatter mixed with
invoice, identifier, date, money and negation sentences; ``--facts`` is the
share of fact sentences, 0 for plain chatter) or reads ``--file``, runs
``extract_atoms`` on it ``--runs`` times and prints the median time, the
throughput in MB/s (wall clock and CPU time) and the median ratio to a
baseline timed alternately with it in the same run
(``re.findall(r"\\w+", text)`` on the same text), so figures from noisy or
different machines stay comparable. With ``--optional``, dateparser,
price-parser and quantulum3 are timed on a sample if they happen to be
installed; none of them is needed.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lossgate.gate.atoms import extract_atoms

CHATTER = [
    "Thanks for reaching out, I am happy to help with that today.",
    "Let me take a look at your account and see what is going on.",
    "I understand this has been frustrating and I appreciate your patience.",
    "Could you confirm the email address you used when you signed up?",
    "The team is looking into it and we will follow up as soon as we can.",
    "That makes sense, and I have added a note to the ticket for the engineers.",
    "Is there anything else I can help you with while we wait?",
    "I checked the logs and the sync job finished without any errors overnight.",
    "The dashboard should refresh within a few minutes after the change.",
    "We do not store card numbers on our side, the processor handles that.",
    "Please do not share your password with anyone, including our staff.",
    "The customer never received the confirmation message for the order.",
    "Our policy is that refunds without a receipt are reviewed by a supervisor.",
    "I've escalated this to the billing team and they will reply by email.",
    "The user said the export button was greyed out in the new interface.",
    "That feature is not available on the starter plan, only on business.",
]
FIRST = ["Marcus", "Priya", "Elena", "Tom", "Aisha", "Kenji", "Sofia", "David"]
LAST = ["Chen", "Patel", "Rossi", "Nguyen", "Okafor", "Tanaka", "Garcia", "Miller"]
ORGS = ["Acme Corp", "Globex Inc.", "Initech LLC", "Umbrella Ltd", "Stark Industries"]
ZONES = ["EST", "PST", "UTC", "CET"]


def _fact(rng: random.Random) -> str:
    amount = rng.randint(100, 99_999)
    day = datetime(2026, 1, 1) + timedelta(days=rng.randint(0, 300))
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    forms = [
        (
            f"Customer cust_{rng.randint(1, 9999)} ({rng.choice(ORGS)}) called at "
            f"{day:%Y-%m-%d} {rng.randint(8, 18)}:{rng.randint(0, 59):02d} {rng.choice(ZONES)} "
            f"about invoice INV-{rng.randint(1000, 9999)} totaling ${amount:,}."
        ),
        (
            f"The customer agreed to pay {amount:,} USD within {rng.randint(2, 30)} business days "
            f"(by {day:%B} {day.day}, {day.year})."
        ),
        (
            f"Tool call: invoice.adjust(invoice_id='INV-{rng.randint(1000, 9999)}', "
            f"adjustment_amount=-{rng.randint(10, 5000)}) returned credit_memo_id='CM-{rng.randint(1000, 9999)}'."
        ),
        f"{name} from {rng.choice(ORGS)} said the work was not authorized by their CTO.",
        (
            f"Discount of {rng.randint(1, 40)}% applied to line item {rng.randint(1, 12)}; "
            f"ticket TKT-{rng.randint(100, 99999):05d} stays open until {day:%m/%d/%Y}."
        ),
        (
            f"Reach {name.split()[0].lower()}@example.com or +1 (555) {rng.randint(100, 999)}-"
            f"{rng.randint(1000, 9999)} before EOD {day:%Y-%m-%d}."
        ),
        (
            f"Latency rose to {rng.randint(20, 900)} ms for {rng.randint(2, 500)} users after "
            f"the deploy at {rng.randint(1, 12)}:{rng.randint(0, 59):02d} pm."
        ),
    ]
    return rng.choice(forms)


def synthetic_text(words: int, seed: int, facts: float = 0.35) -> str:
    """About ``words`` words of conversation, the same for the same seed."""
    rng = random.Random(seed)
    lines: list[str] = []
    count = 0
    while count < words:
        speaker = rng.choice(["user", "assistant"])
        parts = [rng.choice(CHATTER) if rng.random() >= facts else _fact(rng) for _ in range(rng.randint(1, 4))]
        line = f"{speaker}: " + " ".join(parts)
        lines.append(line)
        count += len(line.split())
    return "\n".join(lines)


def _median_seconds(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _paired(fn: Callable[[], object], base: Callable[[], object], runs: int) -> dict[str, float]:
    """Time ``fn`` and ``base`` alternately, so both see the same machine
    load; report wall-clock and CPU-time medians and the median of the
    per-pair ratios (the figure to compare across machines)."""
    wall: list[float] = []
    cpu: list[float] = []
    ratios: list[float] = []
    base_wall: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        base()
        t1, c1 = time.perf_counter(), time.process_time()
        fn()
        t2, c2 = time.perf_counter(), time.process_time()
        base_wall.append(t1 - t0)
        wall.append(t2 - t1)
        cpu.append(c2 - c1)
        ratios.append((t2 - t1) / (t1 - t0))
    return {
        "wall": statistics.median(wall),
        "cpu": statistics.median(cpu),
        "best": min(wall),
        "base": statistics.median(base_wall),
        "ratio": statistics.median(ratios),
    }


def _optional(text: str, runs: int) -> None:
    sample = text[:20_000]  # these libraries are slow; keep it short
    probes: list[tuple[str, Callable[[], object]]] = []
    if importlib.util.find_spec("dateparser"):
        from dateparser.search import search_dates  # type: ignore[import-not-found]

        probes.append(("dateparser.search_dates", lambda: search_dates(sample, languages=["en"])))
    if importlib.util.find_spec("price_parser"):
        from price_parser import Price  # type: ignore[import-not-found]

        chunks = sample.split(".")
        probes.append(("price_parser.Price (per sentence)", lambda: [Price.fromstring(c) for c in chunks]))
    if importlib.util.find_spec("quantulum3"):
        from quantulum3 import parser as qparser  # type: ignore[import-not-found]

        probes.append(("quantulum3.parse", lambda: qparser.parse(sample)))
    if not probes:
        print("optional parsers: dateparser, price-parser, quantulum3 not installed (skipped)")
        return
    size = len(sample.encode())
    for name, fn in probes:
        sec = _median_seconds(fn, max(1, runs // 5))
        print(f"{name:38s} {size / sec / 1e6:8.3f} MB/s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--facts", type=float, default=0.35, help="share of sentences that carry facts (0 = plain chatter)")
    ap.add_argument("--file", help="measure this UTF-8 text file instead of synthetic text")
    ap.add_argument("--optional", action="store_true", help="also time dateparser & co. if installed")
    args = ap.parse_args(argv)

    if args.file:
        text = Path(args.file).read_text(encoding="utf-8")
    else:
        text = synthetic_text(args.words, args.seed, facts=args.facts)
    size = len(text.encode())
    ref = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
    atoms = extract_atoms(text, reference_time=ref)
    word_re = re.compile(r"\w+")

    def base() -> object:
        return word_re.findall(text)

    ours = _paired(lambda: extract_atoms(text, reference_time=ref), base, args.runs)
    plain = _paired(lambda: extract_atoms(text, reference_time=ref, affirmations=False), base, args.runs)
    print(
        f"text: {len(text.split())} words, {size / 1e6:.3f} MB, {len(atoms)} atoms "
        f"({sum(a.key.startswith('is|') for a in atoms)} affirmations), {args.runs} runs"
    )
    for name, r in (("extract_atoms", ours), ("extract_atoms(affirmations=False)", plain)):
        print(
            f"{name:34s} median {r['wall']:.4f} s  {size / r['wall'] / 1e6:6.2f} MB/s "
            f"(cpu {size / r['cpu'] / 1e6:5.2f}, best {size / r['best'] / 1e6:5.2f} MB/s)  "
            f"{r['ratio']:5.1f}x baseline"
        )
    label = "baseline re.findall(r'\\w+')"
    print(f"{label:34s} median {ours['base']:.4f} s  {size / ours['base'] / 1e6:6.2f} MB/s")
    if args.optional:
        _optional(text, args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
