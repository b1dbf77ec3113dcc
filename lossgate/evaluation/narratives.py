"""The narrative lane: how often the critical-topic fence refuses a faithful sentence, and lets
a wrong one through, on sentences written by people who never read the fence.

A corpus is JSON lines, one sentence each, against a shipped gate case::

    {"case": "reference-peanut-allergy", "sentence": "They can eat peanuts now.",
     "label": "wrong", "kind": "contradiction", "after": "The user is allergic to peanuts."}

``label`` is ``faithful`` (true to the memory: the fence must pass it) or ``wrong``.
``after`` (optional) is a sentence it follows, for pronouns ("That no longer holds."). Each
sentence is appended to the case's correct summary and the artifact is gated with the
fence on. The fence *refuses* a sentence when it names it (``narrative_unsupported``); the
gate as a whole refuses it when the artifact fails where the case's own summary did not (the
prose fact diff also catches a changed number, unit, date or identifier, a stale value, ...).

Two corpora ship in ``lossgate/evaluation/data/narratives/``: ``dev.jsonl``, which the
fence was developed against, and ``heldout.jsonl``, written by another hand in another
register and only measured. ``lossgate eval narratives`` prints both.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lossgate.errors import InvalidInput
from lossgate.gate.casefile import GateCase, load_case
from lossgate.gate.engine import check
from lossgate.gate.fence.text import sentences
from lossgate.gate.narrative import without_unproven
from lossgate.gate.preserve import build_must_preserve
from lossgate.gate.publication import as_published
from lossgate.gate.superseded import retired_values
from lossgate.model.wording import NARRATIVE_TITLE, ledger_line_predicates

__all__ = ["CORPORA", "NarrativeItem", "NarrativeReport", "load_corpus", "run_corpus"]

CORPORA = Path(__file__).resolve().parent / "data" / "narratives"
_CASES = Path(__file__).resolve().parents[1] / "fixtures" / "gate" / "cases"
_LABELS = ("faithful", "wrong")


@dataclass(frozen=True)
class NarrativeItem:
    case: str
    sentence: str
    label: str
    kind: str
    after: str = ""


@dataclass
class NarrativeReport:
    corpus: str
    faithful: int = 0
    wrong: int = 0
    false_alarms: list[tuple[NarrativeItem, str]] = field(default_factory=list)  # (item, the fence's reason)
    misses: list[NarrativeItem] = field(default_factory=list)  # wrong sentences the fence passed
    kinds: Counter[str] = field(default_factory=Counter)  # wrong sentences by kind
    caught_kinds: Counter[str] = field(default_factory=Counter)  # ... that the fence refused
    gate_false_alarms: list[tuple[NarrativeItem, str]] = field(default_factory=list)  # faithful, gate failed
    gate_misses: list[NarrativeItem] = field(default_factory=list)  # wrong, and the gate did not fail
    # What is published (lossgate.gate.narrative, policy "omit"): the sentence is left out,
    # or it stays and the gate refuses the whole summary, or it reaches what recall returns.
    omitted: Counter[str] = field(default_factory=Counter)  # by label
    # ... of them, each of whose sentences the ledger's line for a predicate it was about replaced
    spoken: Counter[str] = field(default_factory=Counter)  # by label
    refused: Counter[str] = field(default_factory=Counter)  # by label: the attempt would fail
    reached: list[NarrativeItem] = field(default_factory=list)  # wrong sentences an agent would read
    kept: int = 0  # faithful sentences left in the published narrative

    @property
    def reach_rate(self) -> float:
        """The share of wrong sentences that reach what recall returns (the goal: 0)."""
        return len(self.reached) / self.wrong if self.wrong else 0.0

    @property
    def kept_rate(self) -> float:
        """The share of faithful sentences kept in the published narrative."""
        return self.kept / self.faithful if self.faithful else 0.0

    @property
    def in_place_rate(self) -> float:
        """The share of faithful sentences kept, or left out with the ledger's line for what
        they were about in their place: what they said still reaches the agent where they said it."""
        return (self.kept + self.spoken["faithful"]) / self.faithful if self.faithful else 0.0

    @property
    def false_alarm_rate(self) -> float:
        return len(self.false_alarms) / self.faithful if self.faithful else 0.0

    @property
    def catch_rate(self) -> float:
        return (self.wrong - len(self.misses)) / self.wrong if self.wrong else 0.0

    @property
    def gate_false_alarm_rate(self) -> float:
        return len(self.gate_false_alarms) / self.faithful if self.faithful else 0.0

    @property
    def gate_catch_rate(self) -> float:
        return (self.wrong - len(self.gate_misses)) / self.wrong if self.wrong else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "corpus": self.corpus,
            "faithful": self.faithful,
            "wrong": self.wrong,
            "false_alarm_rate": round(self.false_alarm_rate, 4),
            "catch_rate": round(self.catch_rate, 4),
            "gate_false_alarm_rate": round(self.gate_false_alarm_rate, 4),
            "gate_catch_rate": round(self.gate_catch_rate, 4),
            "gate_false_alarms": [
                {"case": i.case, "sentence": i.sentence, "reason": why} for i, why in self.gate_false_alarms
            ],
            "false_alarms": [{"case": i.case, "sentence": i.sentence, "reason": why} for i, why in self.false_alarms],
            "misses": [{"case": i.case, "sentence": i.sentence, "kind": i.kind} for i in self.misses],
            "wrong_by_kind": {k: {"total": n, "caught": self.caught_kinds[k]} for k, n in sorted(self.kinds.items())},
            "published": {
                "wrong_reach_rate": round(self.reach_rate, 4),
                "faithful_kept_rate": round(self.kept_rate, 4),
                "faithful_in_place_rate": round(self.in_place_rate, 4),
                "omitted": dict(self.omitted),
                "spoken_by_the_ledger": dict(self.spoken),
                "refused": dict(self.refused),
                "reached": [{"case": i.case, "sentence": i.sentence, "kind": i.kind} for i in self.reached],
            },
        }


def load_corpus(path: str | Path) -> list[NarrativeItem]:
    """The corpus at ``path``; :class:`InvalidInput` names the first bad line, or says the file
    cannot be read or holds no sentence."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read the corpus ({exc.__class__.__name__})") from None
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            item = NarrativeItem(
                case=str(doc["case"]),
                sentence=str(doc["sentence"]),
                label=str(doc["label"]),
                kind=str(doc.get("kind", "")),
                after=str(doc.get("after") or ""),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(f"{path}:{n}: not a narrative item ({exc})") from None
        if item.label not in _LABELS:
            raise InvalidInput(f"{path}:{n}: label must be one of {', '.join(_LABELS)}, not {item.label!r}")
        items.append(item)
    if not items:
        raise InvalidInput(f"{path}: no sentence in the corpus")
    return items


def run_corpus(path: str | Path) -> NarrativeReport:
    """Gate every sentence of the corpus at ``path`` (see the module docstring)."""
    report = NarrativeReport(corpus=Path(path).name)
    cases: dict[str, tuple[GateCase, bool]] = {}  # each case, and whether its own summary fails
    for item in load_corpus(path):
        if item.case not in cases:
            file = _CASES / f"{item.case}.json"
            if not file.is_file():
                raise InvalidInput(f"{path}: no shipped gate case {item.case!r}")
            base = load_case(file)
            cases[item.case] = base, check(base.snapshot, base.artifact, base.registry).outcome == "failed"
        case, failed_before = cases[item.case]
        extra = f"{item.after} {item.sentence}".strip()
        artifact = case.artifact.model_copy(update={"summary": f"{case.artifact.summary}\n{extra}"})
        result = check(case.snapshot, artifact, case.registry)
        fence = [
            v.detail
            for v in result.violations
            if v.code == "narrative_unsupported" and item.sentence.rstrip(".")[:40] in v.detail
        ]
        failed = result.outcome == "failed" and not failed_before
        _publish(report, item, case, extra, failed_before)
        if item.label == "faithful":
            report.faithful += 1
            if fence:
                report.false_alarms.append((item, fence[0]))
            if failed:
                report.gate_false_alarms.append((item, "; ".join(str(v) for v in result.violations)))
        else:
            report.wrong += 1
            report.kinds[item.kind] += 1
            if fence:
                report.caught_kinds[item.kind] += 1
            else:
                report.misses.append(item)
            if not failed:
                report.gate_misses.append(item)
    return report


def _publish(report: NarrativeReport, item: NarrativeItem, case: GateCase, extra: str, failed_before: bool) -> None:
    """What an agent would read of ``item`` written as a model's narrative (the case's summary
    and the sentence under a narrative title): left out, refused with its summary, or read."""
    artifact = case.artifact.model_copy(update={"summary": f"{case.artifact.summary}\n{NARRATIVE_TITLE}\n{extra}"})
    must = build_must_preserve(case.snapshot, case.registry)
    retired = retired_values(case.snapshot.facts, case.snapshot.conflicts)
    said = item.sentence.strip()
    publication = as_published(case.snapshot, artifact, must, case.registry, retired=retired)
    published, omitted = publication.body, publication.omitted
    if (
        said in published.summary
        and not failed_before
        and (result := check(case.snapshot, published, case.registry, must=must)).outcome == "failed"
    ):
        # as consolidation does under omit: a sentence refused for what it says is left out
        pruned = without_unproven(case.snapshot, published, result.violations, retired=retired)
        if pruned is None or check(case.snapshot, pruned[0], case.registry, must=must).outcome == "failed":
            report.refused[item.label] += 1
            return
        published, omitted = pruned[0], omitted + pruned[1]
    if said not in published.summary:
        report.omitted[item.label] += 1
        # spoken in place: each of its sentences is published, or left out for a ledger line
        named = {p for line in published.summary.split("\n") for p in ledger_line_predicates(line)}
        spoken = {o.sentence for o in omitted if o.spoken and named.issuperset(o.spoken)}
        if all(raw in spoken or raw in published.summary for raw, _ in sentences(said)):
            report.spoken[item.label] += 1
    elif item.label == "wrong":
        report.reached.append(item)
    else:
        report.kept += 1
