"""The lineage graph of a subject, drawn as inline SVG on the server (no script).

Three columns, left to right: the events the artifacts were derived from, the facts,
then the artifacts themselves, oldest at the top. A line joins an artifact to each of its
inputs (W3C PROV ``wasDerivedFrom``); an artifact built on another one (an incremental
parent, a hierarchical root's parts) is joined to it by a curve on the right. Every node
carries classes naming its kind and state (``node artifact state-stale stale``, ``node
event state-revoked gone``), a ``<title>`` with its full id, and a stale artifact also
says STALE in its box, so the mark does not rest on colour alone. Every text is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

__all__ = ["GraphArtifact", "lineage_svg", "LEGEND", "MAX_NODES"]

MAX_NODES = 60  # per column: a subject with more is drawn in part, and says so

_COL_X = {"event": 10, "fact": 250, "artifact": 490}
_NODE_W, _NODE_H, _ROW = 200, 34, 46
_TOP = 40
_WIDTH = 760

# the states that take an artifact out of recall, or that an input is out of the authorized view in
_GONE_INPUT = {"revoked", "deleted", "superseded"}

LEGEND: tuple[tuple[str, str], ...] = (
    ("node artifact state-published", "published artifact (the alias points here)"),
    ("node artifact stale state-stale", "stale artifact: an input changed after it was built"),
    ("node artifact state-failed", "failed / refused / abandoned artifact (the gate said no)"),
    ("node artifact state-other", "other artifact (candidate, retired, shadow, review)"),
    ("node event", "event"),
    ("node fact", "fact"),
    ("node event gone", "revoked, deleted or superseded input"),
)


@dataclass(frozen=True)
class GraphArtifact:
    """An artifact as the graph draws it: its id, state and inputs (kind, id)."""

    artifact_id: str
    state: str
    inputs: Sequence[tuple[str, str]] = field(default_factory=tuple)


def _short(text: str, n: int = 26) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _artifact_classes(state: str) -> str:
    if state == "published":
        kind = "state-published"
    elif state == "stale":
        kind = "stale state-stale"
    elif state in {"failed", "refused", "abandoned", "quarantined"}:
        kind = f"state-failed state-{state}"
    else:
        kind = f"state-other state-{state}"
    return f"node artifact {kind}"


def lineage_svg(
    artifacts: Sequence[GraphArtifact], input_states: Mapping[str, str], *, max_nodes: int = MAX_NODES
) -> str:
    """The SVG of ``artifacts`` (oldest first) and their inputs; ``input_states`` maps an
    event or fact id to its state or status (``valid``, ``revoked``, ``active``, ...)."""
    shown = list(artifacts)[-max_nodes:]
    hidden_artifacts = len(artifacts) - len(shown)
    columns: dict[str, list[str]] = {"event": [], "fact": [], "artifact": [a.artifact_id for a in shown]}
    hidden: dict[str, int] = {"event": 0, "fact": 0, "artifact": hidden_artifacts}
    seen: set[tuple[str, str]] = {("artifact", a.artifact_id) for a in shown}
    for a in shown:
        for kind, input_id in a.inputs:
            col = kind if kind in columns else "event"
            if (col, input_id) in seen:
                continue
            seen.add((col, input_id))
            if col == "artifact":  # an input artifact not among those shown: draw it on top
                columns["artifact"].insert(0, input_id)
            elif len(columns[col]) < max_nodes:
                columns[col].append(input_id)
            else:
                hidden[col] += 1
    pos = {
        (col, node_id): (_COL_X[col], _TOP + i * _ROW) for col, ids in columns.items() for i, node_id in enumerate(ids)
    }
    rows = max([len(ids) for ids in columns.values()] + [1])
    height = _TOP + rows * _ROW + 30
    state_of = {a.artifact_id: a.state for a in shown}

    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lineage" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" role="img" aria-label="lineage graph">',
        '<g class="headers">',
        *(
            f'<text class="col-head" x="{x}" y="22">{label}</text>'
            for x, label in ((_COL_X["event"], "events"), (_COL_X["fact"], "facts"), (_COL_X["artifact"], "artifacts"))
        ),
        '</g><g class="edges">',
    ]
    for a in shown:
        ax, ay = pos[("artifact", a.artifact_id)]
        for kind, input_id in a.inputs:
            col = kind if kind in columns else "event"
            if (col, input_id) not in pos:
                continue
            ix, iy = pos[(col, input_id)]
            if col == "artifact":
                x0, y0, y1 = ax + _NODE_W, ay + _NODE_H / 2, iy + _NODE_H / 2
                bend = x0 + 30 + min(abs(y1 - y0) / 6, 30)
                out.append(
                    f'<path class="edge edge-artifact" d="M{x0},{y0} C{bend},{y0} {bend},{y1} {x0},{y1}">'
                    f"<title>{escape(a.artifact_id)} ← {escape(input_id)}</title></path>"
                )
            else:
                out.append(
                    f'<line class="edge edge-{col}" x1="{ax}" y1="{ay + _NODE_H / 2}" '
                    f'x2="{ix + _NODE_W}" y2="{iy + _NODE_H / 2}"/>'
                )
    out.append('</g><g class="nodes">')
    for col, ids in columns.items():
        for node_id in ids:
            x, y = pos[(col, node_id)]
            if col == "artifact":
                state = state_of.get(node_id, "unknown")
                classes = _artifact_classes(state)
            else:
                state = input_states.get(node_id, "unknown")
                classes = f"node {col} state-{escape(state)}" + (" gone" if state in _GONE_INPUT else "")
            label = _short(node_id)
            tag = "STALE · " if state == "stale" else ""
            out.append(
                f'<g class="{classes}" data-id="{escape(node_id)}" data-state="{escape(state)}">'
                f"<title>{escape(col)} {escape(node_id)} ({escape(state)})</title>"
                f'<rect x="{x}" y="{y}" width="{_NODE_W}" height="{_NODE_H}" rx="5"/>'
                f'<text class="id" x="{x + 8}" y="{y + 14}">{escape(label)}</text>'
                f'<text class="state" x="{x + 8}" y="{y + 28}">{tag}{escape(state)}</text></g>'
            )
    out.append("</g>")
    more = [f"{n} more {col}{'s' if n > 1 else ''}" for col, n in hidden.items() if n]
    if more:
        out.append(f'<text class="more" x="10" y="{height - 8}">not drawn: {escape(", ".join(more))}</text>')
    out.append("</svg>")
    return "".join(out)


def legend_html(entries: Iterable[tuple[str, str]] = LEGEND) -> str:
    """The legend: a small swatch of each node class, drawn with the graph's own styles."""
    items = []
    for classes, text in entries:
        items.append(
            f'<li><svg width="34" height="18" aria-hidden="true"><g class="{classes}">'
            f'<rect x="1" y="1" width="32" height="16" rx="3"/></g></svg> {escape(text)}</li>'
        )
    return f'<ul class="legend">{"".join(items)}</ul>'


__all__ += ["legend_html"]
