"""A report a person looks at (``lossgate report --out report.html``).

One self-contained HTML file: every figure is a PNG drawn by matplotlib (the Agg
backend, object-oriented: no display, no global pyplot state) and **embedded in the
page** as a ``data:image/png;base64`` URI, so the file can be mailed or archived alone.
Each figure has a table beside it with the numbers it draws:

* **daily fidelity metrics over time** (:func:`lossgate.ops.daily.trend`): key-fact
  recall, erroneous-new-fact rate, conflict retention, token reduction, failure rate and
  stale artifacts visible to recall, per tenant and overall (each tenant's last run of a
  day; overall from the tenants' counts);
* **gate outcomes and violation codes over time**, from the consolidation attempts
  (every attempt kept, invariant 11) started in the window, by day (UTC): each attempt's
  gate outcome (``clean``, ``acceptable``, ``failed``), or its status when it has none
  (``error``, ``conflict``, ``selected``), and the codes of its violations;
* **recall served from summary and from raw memory**, per tenant, from the recall
  records in the window (at most ``recall_limit`` newest per subject);
* **LoCoMo**, when a result file of ``lossgate eval locomo --json FILE`` is given
  (either form: evidence recall by category, or ``--periods``).

The tenants are named, as for the daily run: a store is read one tenant at a time. The
attempts and recall records are read subject by subject: the cost grows with the
tenants' subjects and history in the window. The file is written whole or not at all
(a temporary file beside it, then renamed); matplotlib missing is a
:class:`~lossgate.errors.ConfigError` that says how to install it
(``pip install 'lossgate[report]'``).
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from lossgate.errors import ConfigError, InvalidInput
from lossgate.model.instants import shift_date
from lossgate.model.records import utcnow
from lossgate.ops.daily import RATES, DayFigures, Tally, trend
from lossgate.store import Store

__all__ = ["ReportData", "Report", "collect", "render", "write_report", "load_locomo"]

# What an attempt is counted as, in this order on the figure.
OUTCOMES = ("clean", "acceptable", "failed", "error", "conflict", "selected")
_COLORS = {
    "clean": "#2e7d32",
    "acceptable": "#9ccc65",
    "failed": "#c62828",
    "error": "#6a1b9a",
    "conflict": "#f9a825",
    "selected": "#9e9e9e",
    "summary": "#1565c0",
    "raw_fallback": "#ef6c00",
}
_TOP_CODES = 8
_PANELS = (
    ("key_fact_recall", "key-fact recall"),
    ("erroneous_new_fact_rate", "erroneous-new-fact rate"),
    ("conflict_retention", "conflict retention"),
    ("token_reduction", "token reduction"),
    ("failure_rate", "failure rate"),
    ("stale_visible", "stale artifacts visible to recall"),
    ("prose_drift_rate", "prose-drift rate"),
)


def blocks(tally: Tally) -> bool:
    """Whether a day's tally fired a blocking rule of ``lossgate eval daily`` at its default
    thresholds: an erroneous new fact, a stale artifact visible to recall, or a summary whose
    prose drifts (a threshold a run raised is not stored; the run's own exit code says it)."""
    return bool(tally.erroneous_claims or tally.stale_visible or tally.summaries_drifted)


@dataclass
class ReportData:
    """What the report shows, read from the store (:func:`collect`)."""

    tenants: tuple[str, ...]
    since: date
    until: date
    days: list[DayFigures] = field(default_factory=list)
    outcomes: dict[date, Counter[str]] = field(default_factory=dict)  # day -> outcome -> attempts
    codes: dict[date, Counter[str]] = field(default_factory=dict)  # day -> violation code -> count
    recalls: dict[str, Counter[str]] = field(default_factory=dict)  # tenant -> mode -> recalls
    locomo: dict[str, Any] | None = None


@dataclass
class Report:
    """The page and its figures (PNG bytes by name, each also embedded in ``html``)."""

    html: str
    figures: dict[str, bytes]


def load_locomo(path: Path) -> dict[str, Any]:
    """A ``lossgate eval locomo --json`` result; :class:`InvalidInput` for anything else."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"--locomo {path}: not a readable JSON file ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or not (
        isinstance(doc.get("sides"), dict)
        or (isinstance(doc.get("conversations"), list) and isinstance(doc.get("overall"), dict))
    ):
        raise InvalidInput(
            f"--locomo {path}: not a result of `lossgate eval locomo --json` "
            "(no 'sides', nor 'conversations' with 'overall')"
        )
    return doc


def collect(store: Store, tenants: Sequence[str], *, since: date, until: date, recall_limit: int = 1000) -> ReportData:
    """Read the figures of the named tenants for the days ``since`` to ``until`` (UTC)."""
    names = tuple(dict.fromkeys(tenants))
    if not names:
        raise InvalidInput("name at least one tenant: a store is read one tenant at a time")
    if since > until:
        raise InvalidInput(f"the window starts ({since}) after it ends ({until})")
    data = ReportData(tenants=names, since=since, until=until, days=trend(store, names, since=since, until=until))
    for tenant in names:
        modes = data.recalls.setdefault(tenant, Counter())
        with store.read() as tx:
            for subject in tx.subjects(tenant):
                for attempt in tx.attempts(tenant, subject):
                    day = attempt.started_at.astimezone(UTC).date()
                    if not since <= day <= until:
                        continue
                    label = (
                        attempt.status
                        if attempt.status in ("error", "conflict")
                        else (attempt.gate_outcome or attempt.status)
                    )
                    data.outcomes.setdefault(day, Counter())[label] += 1
                    for line in attempt.violations:
                        data.codes.setdefault(day, Counter())[line.rsplit(":", 1)[-1]] += 1
                for record in tx.recalls(tenant, subject, limit=recall_limit):
                    if since <= record.at.astimezone(UTC).date() <= until:
                        modes[record.mode] += 1
    return data


# -- drawing -------------------------------------------------------------------------------


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ConfigError(
            "the report draws its figures with matplotlib, which is not installed: pip install 'lossgate[report]'"
        ) from exc
    import matplotlib

    # A tenant, subject or side is a name, never TeX: "a$x^$" is drawn as written.
    matplotlib.rcParams["text.parse_math"] = False
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _legend(name: str) -> str:
    """``name`` as a legend label: matplotlib leaves out a label starting with "_"."""
    return "\u200b" + name if name.startswith("_") else name


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})  # no version stamp: same data, same bytes
    return buf.getvalue()


def _no_data(ax: Any, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} in this window", ha="center", va="center", transform=ax.transAxes, color="#757575")
    ax.set_xticks([])
    ax.set_yticks([])


def daily_figure(days: list[DayFigures], tenants: Sequence[str]) -> bytes:
    """Each daily metric over time: a line per tenant, overall dashed in black, and a red band
    on each day a blocking rule fired."""
    fig = _figure(15, 6.5)
    axes = fig.subplots(2, 4)
    axes.flat[-1].set_axis_off()  # seven panels
    blocked = [d.day for d in days if any(blocks(t) for t in d.tenants.values())]
    ticks = [d.day for d in days][:: max(1, -(-len(days) // 10))]  # at most 10 labelled days
    for ax, (metric, title) in zip(axes.flat, _PANELS, strict=False):
        ax.set_title(title, fontsize=10)
        series = [
            (t, [d.day for d in days if t in d.tenants], [d.tenants[t] for d in days if t in d.tenants])
            for t in tenants
        ]
        series.append(("overall", [d.day for d in days], [d.overall for d in days]))
        top, low = 0.0, 0.0
        for name, xs, tallies in series:
            points = [(x, y) for x, y in zip(xs, (_value(t, metric) for t in tallies), strict=False) if y is not None]
            if not points:
                continue
            overall = name == "overall"
            top, low = max(top, *(p[1] for p in points)), min(low, *(p[1] for p in points))
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                marker="o",
                markersize=3,
                label=_legend(name),
                color="black" if overall else None,
                linewidth=2.2 if overall else 1.2,
                linestyle="--" if overall else "-",
            )
        if not ax.lines:
            _no_data(ax, "figures")
            continue
        for day in blocked:
            ax.axvline(day, color="#c62828", alpha=0.15, linewidth=10)
        if metric in RATES:
            ax.set_ylim(low - 0.05, 1.05)  # a summary longer than its sources reduces by less than 0
            ax.yaxis.set_major_formatter(_percent())
        else:
            ax.set_ylim(0, max(1.0, top * 1.1))
            ax.yaxis.set_major_locator(_integers())
        ax.set_xticks(ticks, [d.strftime("%m-%d") for d in ticks])
        # half a day each side (dates are whole days: as datetimes, or the limits coincide)
        first, last = (datetime.combine(d, datetime.min.time()) for d in (days[0].day, days[-1].day))
        pad = timedelta(hours=12)  # none past the calendar's ends
        ax.set_xlim(
            first - pad if first >= datetime.min + pad else first, last + pad if last <= datetime.max - pad else last
        )
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
        ax.grid(alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6), fontsize=8)
    fig.suptitle("Daily fidelity metrics of rebuilt samples (red: a blocking rule fired that day)", fontsize=11)
    return _png(fig)


def _percent() -> Any:
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0, decimals=0)


def _integers() -> Any:
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _value(tally: Tally, metric: str) -> float | None:
    return tally.rates()[metric] if metric in RATES else float(getattr(tally, metric))


def gate_figure(outcomes: dict[date, Counter[str]], codes: dict[date, Counter[str]]) -> bytes:
    """Attempts by gate outcome per day, and the violation codes they named per day (stacked)."""
    fig = _figure(12, 4.2)
    left, right = fig.subplots(1, 2)
    left.set_title("consolidation attempts by outcome", fontsize=10)
    right.set_title("violation codes named by the gate", fontsize=10)
    _stacked(left, outcomes, [o for o in OUTCOMES if any(c[o] for c in outcomes.values())], "attempts")
    total: Counter[str] = Counter()
    for c in codes.values():
        total.update(c)
    top = [code for code, _ in total.most_common(_TOP_CODES)]
    folded: dict[date, Counter[str]] = {}
    for day, c in codes.items():  # "other" sums every code outside the most frequent ones
        folded[day] = Counter()
        for k, v in c.items():
            folded[day][k if k in top else "other"] += v
    _stacked(right, folded, top + (["other"] if any(c["other"] for c in folded.values()) else []), "violations")
    return _png(fig)


def _stacked(ax: Any, by_day: dict[date, Counter[str]], keys: list[str], what: str) -> None:
    if not by_day or not keys:
        _no_data(ax, what)
        return
    days = sorted(by_day)
    labels = [d.isoformat() for d in days]
    bottom = [0] * len(days)
    for key in keys:
        heights = [by_day[d][key] for d in days]
        ax.bar(labels, heights, bottom=bottom, label=key, color=_COLORS.get(key), width=0.6)
        bottom = [b + h for b, h in zip(bottom, heights, strict=False)]
    ax.set_xlim(-0.75, len(days) - 0.25)
    ax.yaxis.set_major_locator(_integers())
    ax.set_ylabel(what)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)


def recall_figure(recalls: dict[str, Counter[str]]) -> bytes:
    """Per tenant, the share of recalls served from a fresh summary and from raw memory."""
    tenants = [t for t in recalls if sum(recalls[t].values())]
    fig = _figure(8, 0.9 + 0.45 * max(len(tenants), 1))
    ax = fig.subplots()
    ax.set_title("recall served from summary and from raw memory", fontsize=10)
    if not tenants:
        _no_data(ax, "recalls")
        return _png(fig)
    left = [0.0] * len(tenants)
    for mode, label in (("summary", "summary"), ("raw_fallback", "raw (fallback)")):
        shares = [recalls[t][mode] / sum(recalls[t].values()) for t in tenants]
        bars = ax.barh(tenants, shares, left=left, label=label, color=_COLORS[mode])
        ax.bar_label(
            bars,
            labels=[f"{recalls[t][mode]}" if recalls[t][mode] else "" for t in tenants],
            label_type="center",
            color="white",
            fontsize=8,
        )
        left = [a + b for a, b in zip(left, shares, strict=False)]
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(_percent())
    ax.invert_yaxis()
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig)


def locomo_figure(doc: dict[str, Any]) -> bytes:
    """Evidence recall by category per method (or, for ``--periods``, per conversation:
    token reduction and where the evidence atoms are reached)."""
    fig = _figure(12, 4.2)
    left, right = fig.subplots(1, 2)
    if "sides" in doc:
        sides = doc["sides"]
        cats = [c for c in next(iter(sides.values()), {}) if c != "overall"] + ["overall"]
        width = 0.8 / max(len(sides), 1)
        for i, (name, figures) in enumerate(sides.items()):
            xs = [j + i * width for j in range(len(cats))]
            left.bar(xs, [figures.get(c, {}).get("evidence_recall", 0.0) for c in cats], width, label=_legend(name))
        left.set_xticks([j + 0.4 - width / 2 for j in range(len(cats))], cats, fontsize=8)
        left.set_ylim(0, 1)
        left.yaxis.set_major_formatter(_percent())
        left.set_title(f"LoCoMo evidence recall at {doc.get('budget_tokens', '?')} tokens", fontsize=10)
        left.legend(fontsize=7)
        names = list(sides)
        right.barh(names, [sides[n]["overall"].get("tokens", 0) for n in names], color="#78909c")
        right.set_title("tokens per recall (mean)", fontsize=10)
        right.invert_yaxis()
    else:
        convs = doc["conversations"]
        ids = [c["sample_id"] for c in convs]
        left.bar(ids, [c["reduction"] for c in convs], color="#1565c0")
        left.set_ylim(0, 1)
        left.yaxis.set_major_formatter(_percent())
        left.set_title("token reduction per conversation", fontsize=10)
        bottom = [0] * len(convs)
        for key in ("digest", "question", "atom", "unreachable"):
            heights = [c["atoms"].get(key, 0) for c in convs]
            right.bar(ids, heights, bottom=bottom, label=key)
            bottom = [b + h for b, h in zip(bottom, heights, strict=False)]
        right.set_title("evidence atoms: where each is reached", fontsize=10)
        right.legend(fontsize=7)
    for ax in (left, right):
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    return _png(fig)


# -- the page --------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], caption: str) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _daily_rows(days: list[DayFigures]) -> list[list[Any]]:
    rows = []
    for d in days:
        for name, tally in [*sorted(d.tenants.items()), ("overall", d.overall)]:
            r = tally.rates()
            rows.append(
                [
                    d.day.isoformat(),
                    name,
                    d.runs.get(name, ""),
                    tally.subjects,
                    _pct(r["key_fact_recall"]),
                    _pct(r["erroneous_new_fact_rate"]),
                    _pct(r["conflict_retention"]),
                    _pct(r["token_reduction"]),
                    _pct(r["failure_rate"]),
                    tally.stale_visible,
                    _pct(r["prose_drift_rate"]),
                    "BLOCKED" if blocks(tally) else "ok",
                ]
            )
    return rows


def _locomo_table(doc: dict[str, Any]) -> str:
    if "sides" in doc:
        sides = doc["sides"]
        cats = [c for c in next(iter(sides.values()), {}) if c != "overall"] + ["overall"]
        rows = [
            [
                name,
                *(f"{figures[c]['evidence_recall']:.3f}" if c in figures else "–" for c in cats),
                f"{figures['overall'].get('tokens', 0):,.0f}",
                _pct(figures["overall"].get("token_reduction")),
            ]
            for name, figures in sides.items()
        ]
        return _table(
            ["method", *cats, "tokens", "reduction"],
            rows,
            f"LoCoMo evidence recall ({doc.get('conversations', '?')} conversations)",
        )
    rows = [
        [
            c["sample_id"],
            c.get("path") or "–",
            f"{c['sessions_covered']}/{c['sessions']}",
            c["raw_tokens"],
            c["published_tokens"],
            _pct(c["reduction"]),
            c["atoms"].get("atoms", 0),
            c["atoms"].get("unreachable", 0),
        ]
        for c in doc["conversations"]
    ]
    return _table(
        ["conversation", "path", "sessions dated", "raw tokens", "published", "reduction", "atoms", "unreachable"],
        rows,
        "LoCoMo published memory by period",
    )


_STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#212121}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:1em 0;font-size:.85em}caption{text-align:left;font-weight:bold;padding:.3em 0}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}th:first-child,td:first-child{text-align:left}
img{max-width:100%}.note{color:#616161}"""


def render(data: ReportData) -> Report:
    """Draw every figure and write the page."""
    figures = {
        "daily-metrics": daily_figure(data.days, data.tenants),
        "gate-outcomes": gate_figure(data.outcomes, data.codes),
        "recall-modes": recall_figure(data.recalls),
    }
    if data.locomo is not None:
        figures["locomo"] = locomo_figure(data.locomo)
    window = f"{data.since.isoformat()} to {data.until.isoformat()} (UTC)"
    parts = [
        f"<h1>lossgate report</h1><p class=note>Tenants: {html.escape(', '.join(data.tenants))}. "
        f"Window: {window}. Generated {html.escape(utcnow().isoformat(timespec='seconds'))}.</p>",
        "<h2>Daily fidelity metrics</h2>",
        _img(figures["daily-metrics"], "daily fidelity metrics over time"),
    ]
    if data.days:
        parts.append(
            _table(
                [
                    "day",
                    "tenant",
                    "run",
                    "rebuilt",
                    "key-fact recall",
                    "erroneous-new-fact rate",
                    "conflict retention",
                    "token reduction",
                    "failure rate",
                    "stale visible",
                    "prose-drift rate",
                    "rule",
                ],
                _daily_rows(data.days),
                "each tenant's last run of the day, and overall",
            )
        )
    else:
        parts.append("<p class=note>No daily metrics stored in this window (lossgate eval daily).</p>")
    parts += ["<h2>Gate outcomes and violation codes</h2>", _img(figures["gate-outcomes"], "gate outcomes over time")]
    days = sorted(set(data.outcomes) | set(data.codes))
    parts.append(
        _table(
            ["day", *OUTCOMES],
            [[d.isoformat(), *(data.outcomes.get(d, Counter())[o] for o in OUTCOMES)] for d in days],
            "consolidation attempts by outcome",
        )
    )
    parts.append(
        _table(
            ["day", "violation code", "count"],
            [[d.isoformat(), code, n] for d in days for code, n in sorted(data.codes.get(d, {}).items())],
            "violation codes",
        )
    )
    parts += [
        "<h2>Recall served from summary and from raw memory</h2>",
        _img(figures["recall-modes"], "recall modes per tenant"),
    ]
    parts.append(
        _table(
            ["tenant", "summary", "raw fallback", "share from summary"],
            [
                [t, c["summary"], c["raw_fallback"], _pct(c["summary"] / sum(c.values()) if sum(c.values()) else None)]
                for t, c in data.recalls.items()
            ],
            "recall records by mode",
        )
    )
    parts.append("<h2>LoCoMo</h2>")
    if data.locomo is not None:
        parts += [_locomo_table(data.locomo), _img(figures["locomo"], "LoCoMo results")]
    else:
        parts.append(
            "<p class=note>No LoCoMo results given (lossgate eval locomo --json FILE, then "
            "lossgate report --locomo FILE).</p>"
        )
    page = (
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>lossgate report</title>"
        f"<style>{_STYLE}</style></head><body>{''.join(parts)}</body></html>\n"
    )
    return Report(html=page, figures=figures)


def write_report(
    store: Store,
    tenants: Sequence[str],
    out: Path,
    *,
    days: int = 30,
    until: date | None = None,
    locomo: Path | None = None,
    recall_limit: int = 1000,
) -> Report:
    """Collect, render and write the page to ``out`` whole (or nothing). ``days``: the window
    ending ``until`` (default today, UTC)."""
    out = Path(out)
    if not out.parent.is_dir():
        raise InvalidInput(f"--out {out}: the directory {out.parent} does not exist")
    if out.is_dir():
        raise InvalidInput(f"--out {out}: a directory, not a file")
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 3660:
        raise InvalidInput(f"days must be from 1 to 3660 (ten years), not {days!r}")
    doc = load_locomo(locomo) if locomo is not None else None
    _figure(1, 1)  # matplotlib missing: say so before reading anything
    until = until or utcnow().date()
    since = shift_date(until, 1 - days) or date.min  # a window that starts before year 1 starts there
    data = collect(store, tenants, since=since, until=until, recall_limit=recall_limit)
    data.locomo = doc
    try:
        report = render(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if doc is None:
            raise
        # the LoCoMo file passed the shape check but holds something else where a figure is read
        raise InvalidInput(
            f"--locomo {locomo}: not a result of `lossgate eval locomo --json` ({type(exc).__name__} while drawing it)"
        ) from None
    tmp = out.parent / f".{out.name}.{uuid.uuid4().hex[:8]}.tmp"  # beside it: the rename is atomic
    try:
        with open(tmp, "x", encoding="utf-8") as f:  # the umask's permissions, as any file written here
            f.write(report.html)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return report
