"""The inspection page's HTML, built as strings on the server.

Every value that comes from the store or the request (subject ids, texts, claim values,
violation details, recall queries, agents' answers and actions) goes through :func:`esc` (``html.escape`` with
quotes), so a ``<script>`` in any of them is shown as text. The page has no script at
all, and its Content-Security-Policy (:data:`HEADERS`) forbids one anyway.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from lossgate.service.models import (
    ArtifactOut,
    AttemptOut,
    ClaimOut,
    KeyOut,
    RecallRecordOut,
    ResponseOut,
    SubjectClockOut,
)
from lossgate.service.ui.graph import legend_html

__all__ = ["esc", "layout", "login_page", "message_page", "subjects_page", "subject_page", "HEADERS"]

HEADERS = {
    # no script, no frame, no fetch: styles inline, forms only to this origin
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#1f2d3d;color:#fff;padding:10px 20px;display:flex;align-items:center;gap:16px}
header a{color:#cfe3ff}header .who{margin-left:auto;font-size:12px;opacity:.85}
header form{margin:0}main{padding:16px 20px;max-width:1200px}
h1{font-size:20px;margin:0}h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid #d5dae1;padding-bottom:4px}
table{border-collapse:collapse;background:#fff;width:100%;margin-bottom:8px}
th,td{border:1px solid #d5dae1;padding:4px 7px;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600}code,.mono{font-family:ui-monospace,monospace;font-size:12px}
.kv{width:auto}.kv th{width:170px}
pre.summary{white-space:pre-wrap;background:#fff;border:1px solid #d5dae1;padding:8px;margin:0 0 8px}
tr.refused td{background:#fff1f0}.violation{color:#a8071a;font-weight:600}
ul.violations{margin:0;padding-left:18px}ul.violations li.violation-item{background:#ffa39e;margin:2px 0;padding:1px 4px}
.badge{display:inline-block;padding:0 6px;border-radius:9px;font-size:12px;background:#e6e9ee}
.badge.published,.badge.clean{background:#d9f7be}.badge.stale{background:#ffd8bf;color:#871400}
.badge.rejected,.badge.failed,.badge.error,.badge.refused{background:#ffccc7;color:#820014}
.empty{color:#6b7785;font-style:italic}.error{color:#a8071a}
svg.lineage{background:#fff;border:1px solid #d5dae1}
svg .col-head{font-weight:600;font-size:13px;fill:#334}
svg .node rect{fill:#f0f5ff;stroke:#5b7bb2;stroke-width:1.5}
svg .node text{font:11px ui-monospace,monospace;fill:#1d232a}svg .node text.state{fill:#55606e}
svg .node.fact rect{fill:#f9f0ff;stroke:#8a5cc2}
svg .node.gone rect{fill:#eeeeee;stroke:#8c8c8c;stroke-dasharray:3 3}
svg .node.artifact rect{fill:#fffbe6;stroke:#ad8b00}
svg .node.artifact.state-published rect{fill:#d9f7be;stroke:#237804;stroke-width:2.5}
svg .node.artifact.stale rect{fill:#ff7a45;stroke:#871400;stroke-width:3;stroke-dasharray:6 3}
svg .node.artifact.stale text{fill:#fff;font-weight:700}
svg .node.artifact.state-failed rect{fill:#ffccc7;stroke:#a8071a}
svg .edge{stroke:#9aa5b1;stroke-width:1;fill:none}svg .edge-artifact{stroke:#ad8b00;stroke-width:1.5}
svg .more{font-size:11px;fill:#6b7785}
ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px 18px;margin:6px 0}
ul.legend li{display:flex;align-items:center;gap:6px}
form.login{background:#fff;border:1px solid #d5dae1;padding:16px;max-width:520px}
form.login input[type=password]{width:100%;padding:6px;margin:6px 0 10px;font-family:ui-monospace,monospace}
"""


def esc(value: object) -> str:
    """``value`` as HTML text (quotes too): nothing in it can open a tag or leave an attribute."""
    return escape("" if value is None else str(value), quote=True)


def _json(value: Any) -> str:
    return esc(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))


def layout(title: str, body: str, *, key: KeyOut | None = None) -> str:
    who = ""
    if key is not None:
        who = (
            f'<span class="who">tenant <b>{esc(key.tenant_id)}</b> · key <code>{esc(key.key_id)}</code> '
            f"({esc(', '.join(key.scopes))})</span>"
            '<form method="post" action="/ui/logout"><button type="submit">Log out</button></form>'
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<title>{esc(title)} · lossgate</title><meta name="viewport" content="width=device-width">'
        f"<style>{CSS}</style></head><body>"
        f'<header><h1><a href="/ui">lossgate</a> · {esc(title)}</h1>{who}</header>'
        f"<main>{body}</main></body></html>"
    )


def login_page(problem: str | None = None) -> str:
    note = f'<p class="error">{esc(problem)}</p>' if problem else ""
    body = (
        f'{note}<form class="login" method="post" action="/ui/login">'
        "<p>Open the inspection page with an API key that has the <code>read</code> scope "
        "(<code>lossgate keys create --tenant T --scopes read</code>). The key is kept in an "
        "HttpOnly, SameSite=Strict cookie for this page only; the API itself takes keys only "
        "in the <code>Authorization</code> header.</p>"
        '<label for="key">API key</label>'
        '<input type="password" id="key" name="key" autocomplete="off" required placeholder="lg_...">'
        '<button type="submit">Open</button></form>'
    )
    return layout("log in", body)


def message_page(title: str, message: str, *, key: KeyOut | None = None) -> str:
    return layout(title, f'<p class="error">{esc(message)}</p><p><a href="/ui">back to the subjects</a></p>', key=key)


def subjects_page(key: KeyOut, subjects: Sequence[str]) -> str:
    if subjects:
        items = "".join(f'<li><a href="/ui/subjects/{esc(_path(s))}">{esc(s)}</a></li>' for s in subjects)
        listing = f'<ul class="subjects">{items}</ul>'
    else:
        listing = '<p class="empty">This tenant has no subject yet.</p>'
    return layout("subjects", f"<h2>Subjects of {esc(key.tenant_id)}</h2>{listing}", key=key)


def _path(segment: str) -> str:
    from urllib.parse import quote

    return quote(segment, safe="")


def _badge(value: str | None) -> str:
    if value is None:
        return '<span class="empty">—</span>'
    return f'<span class="badge {esc(value)}">{esc(value)}</span>'


def _kv(rows: Iterable[tuple[str, str]]) -> str:
    return '<table class="kv">' + "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _clock(clock: SubjectClockOut) -> str:
    alias = clock.alias
    return _kv(
        [
            ("high water (seq)", esc(clock.clock.high_water)),
            ("input epoch", esc(clock.clock.input_epoch)),
            (
                "alias → artifact",
                f"<code>{esc(alias.artifact_id)}</code>"
                if alias.artifact_id
                else '<span class="empty">none: recall falls back to raw memory</span>',
            ),
            ("alias source epoch", esc(alias.source_epoch)),
            ("alias covers through", esc(alias.covers_through)),
            ("alias updated", esc(alias.updated_at.isoformat() if alias.updated_at else "—")),
        ]
    )


def _claims(claims: Sequence[ClaimOut]) -> str:
    if not claims:
        return '<p class="empty">No claims.</p>'
    rows = "".join(
        f"<tr><td><code>{esc(c.fact_id)}</code></td><td>{esc(c.predicate)}</td><td><code>{_json(c.value)}</code></td>"
        f"<td>{esc(', '.join(f'{k}={v}' for k, v in c.qualifiers.items()))}</td>"
        f"<td>{esc(c.polarity)} / {esc(c.modality)} / {esc(c.authority)}</td>"
        f"<td><code>{esc(', '.join(c.derived_from))}</code></td></tr>"
        for c in claims
    )
    return (
        '<table class="claims"><tr><th>fact</th><th>predicate</th><th>value</th><th>qualifiers</th>'
        f"<th>polarity / modality / authority</th><th>derived from</th></tr>{rows}</table>"
    )


def _published(artifact: ArtifactOut | None, error: str | None) -> str:
    if artifact is None:
        return f'<p class="empty">{esc(error or "No published artifact: recall falls back to raw memory.")}</p>'
    m = artifact.manifest
    note = ""
    if artifact.state != "published":
        note = (
            f'<p class="error">The alias still names this artifact, but it is {esc(artifact.state)}'
            f"{': ' + esc(artifact.state_reason) if artifact.state_reason else ''}; recall falls back to raw "
            "memory until a rebuild publishes a fresh one.</p>"
        )
    head = note + _kv(
        [
            ("artifact", f"<code>{esc(artifact.artifact_id)}</code> {_badge(artifact.state)}"),
            ("gate", _badge(artifact.gate_outcome)),
            (
                "built",
                esc(
                    f"{artifact.created_at.isoformat()} by {m.compressor} {m.compressor_version}, "
                    f"path {m.path}, attempt {m.attempt}, {m.inputs} inputs, covers through {m.new_covers_through}"
                ),
            ),
        ]
    )
    items = "".join(f"<li>{esc(i)}</li>" for i in artifact.open_items)
    open_items = f"<h3>Open items</h3><ul>{items}</ul>" if items else ""
    return (
        f'{head}<h3>Summary</h3><pre class="summary">{esc(artifact.summary)}</pre>'
        f"<h3>Claims</h3>{_claims(artifact.claims)}{open_items}"
    )


def _violations(a: AttemptOut) -> str:
    if not a.violations and not a.details and not a.losses:
        return '<span class="empty">none</span>'
    parts = []
    if a.violations:
        parts.append(
            '<ul class="violations">'
            + "".join(f'<li class="violation-item"><code class="violation">{esc(v)}</code></li>' for v in a.violations)
            + "</ul>"
        )
    if a.details:
        parts.append(
            '<ul class="violations details">'
            + "".join(f'<li class="violation-detail">{esc(d)}</li>' for d in a.details)
            + "</ul>"
        )
    if a.losses:
        parts.append("<div>losses: " + ", ".join(f"<code>{esc(x)}</code>" for x in a.losses) + "</div>")
    return "".join(parts)


def _attempts(attempts: Sequence[AttemptOut]) -> str:
    if not attempts:
        return '<p class="empty">No consolidation attempt yet.</p>'
    rows = []
    for a in reversed(attempts):  # newest first
        refused = a.status in {"rejected", "error", "conflict"} or a.gate_outcome == "failed"
        why = " ".join(x for x in (a.error, a.reason) if x)
        rows.append(
            f'<tr class="attempt{" refused" if refused else ""}" data-status="{esc(a.status)}">'
            f"<td>{esc(a.number)}</td><td>{_badge(a.status)}{' <b>needs review</b>' if a.needs_review else ''}"
            f'<br><span class="mono">{esc(a.lane)}</span></td>'
            f"<td>{esc(a.started_at.isoformat())}</td><td><code>{esc(a.compressor)}</code></td>"
            f"<td><code>{esc(a.artifact_id or '—')}</code></td><td>{_badge(a.gate_outcome)}</td>"
            f"<td>{_violations(a)}</td><td>{esc(why) or '<span class=empty>—</span>'}</td></tr>"
        )
    return (
        '<table class="attempts"><tr><th>#</th><th>status</th><th>started</th><th>compressor</th>'
        "<th>artifact</th><th>gate</th><th>violations (what was lost or changed)</th><th>error / reason</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _artifacts(artifacts: Sequence[ArtifactOut]) -> str:
    if not artifacts:
        return '<p class="empty">No artifact.</p>'
    rows = "".join(
        f'<tr class="artifact-row state-{esc(a.state)}"><td><code>{esc(a.artifact_id)}</code></td>'
        f"<td>{_badge(a.state)}</td><td>{esc(a.state_reason or '')}</td><td>{_badge(a.gate_outcome)}</td>"
        f"<td>{esc(a.created_at.isoformat())}</td><td>{esc(a.manifest.parent_artifact_id or '')}</td></tr>"
        for a in reversed(artifacts)
    )
    return (
        '<table class="artifacts"><tr><th>artifact</th><th>state</th><th>why</th><th>gate</th><th>created</th>'
        f"<th>parent</th></tr>{rows}</table>"
    )


def _said(r: ResponseOut) -> str:
    """What a response holds: its answer and its action, or that a deletion redacted them."""
    if r.redacted:
        return f'<span class="empty">redacted ({esc(r.redaction_cause)})</span>'
    parts = [esc(r.answer)] if r.answer is not None else []
    if r.action is not None:
        parts.append(f"<code>{_json(r.action)}</code>")
    return "<br>".join(parts)


def _answered(responses: Sequence[ResponseOut]) -> str:
    """The responses made after one recall, in its row."""
    if not responses:
        return '<span class="empty">—</span>'
    return "".join(
        f'<div class="response"><code>{esc(r.response_id)}</code>'
        f"{' (guard <code>' + esc(r.guard_id) + '</code>)' if r.guard_id else ''}: {_said(r)}</div>"
        for r in responses
    )


def _responses(responses: Sequence[ResponseOut]) -> str:
    if not responses:
        return '<p class="empty">No response recorded yet.</p>'
    rows = "".join(
        f'<tr class="response{" redacted" if r.redacted else ""}"><td>{esc(r.at.isoformat())}</td>'
        f"<td><code>{esc(r.response_id)}</code></td><td><code>{esc(r.recall_id)}</code></td>"
        f"<td><code>{esc(r.guard_id or '—')}</code></td><td>{_said(r)}</td></tr>"
        for r in responses
    )
    return (
        '<table class="responses"><tr><th>at</th><th>response</th><th>recall</th><th>guard</th>'
        f"<th>answer / action</th></tr>{rows}</table>"
    )


def _recalls(recalls: Sequence[RecallRecordOut], responses: Sequence[ResponseOut] = ()) -> str:
    if not recalls:
        return '<p class="empty">No recall yet.</p>'
    after: dict[str, list[ResponseOut]] = {}
    for response in responses:
        after.setdefault(response.recall_id, []).append(response)
    rows = []
    for r in recalls:
        if r.redacted:
            query = f'<span class="empty">redacted ({esc(r.query_chars)} characters; touched deleted content)</span>'
        elif r.query is None:
            query = '<span class="empty">no query</span>'
        else:
            query = esc(r.query)
        rows.append(
            f'<tr class="recall"><td>{esc(r.at.isoformat())}<br><code>{esc(r.recall_id)}</code></td>'
            f"<td>{_badge(r.mode)}</td><td>{query}</td>"
            f"<td><code>{esc(r.alias.artifact_id or '—')}</code></td>"
            f"<td>{esc(len(r.candidate_ids))} / {esc(len(r.selected_ids))}</td>"
            f"<td><code>{esc(', '.join(r.selected_ids[:12]))}{' …' if len(r.selected_ids) > 12 else ''}</code></td>"
            f"<td>{esc(r.clock.high_water)} / {esc(r.clock.input_epoch)}</td>"
            f"<td>{_answered(after.get(r.recall_id, []))}</td></tr>"
        )
    return (
        '<table class="recalls"><tr><th>at / recall</th><th>mode</th><th>query</th><th>summary read</th>'
        "<th>considered / returned</th><th>returned ids</th><th>clock (seq / epoch)</th><th>responses</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def subject_page(
    *,
    key: KeyOut,
    subject_id: str,
    clock: SubjectClockOut,
    published: ArtifactOut | None,
    published_error: str | None,
    attempts: Sequence[AttemptOut],
    artifacts: Sequence[ArtifactOut],
    graph: str,
    recalls: Sequence[RecallRecordOut],
    responses: Sequence[ResponseOut] = (),
) -> str:
    refused = sum(1 for a in attempts if a.violations)
    stale = sum(1 for a in artifacts if a.state == "stale")
    body = (
        f'<p><a href="/ui">subjects</a> › <b class="subject-id">{esc(subject_id)}</b> · '
        f"{esc(len(attempts))} attempts ({esc(refused)} with violations) · {esc(len(artifacts))} artifacts "
        f"({esc(stale)} stale)</p>"
        f'<section id="clock"><h2>Clock and alias</h2>{_clock(clock)}</section>'
        f'<section id="published"><h2>Published artifact</h2>{_published(published, published_error)}</section>'
        f'<section id="attempts"><h2>Attempts</h2>{_attempts(attempts)}</section>'
        f'<section id="lineage"><h2>Lineage</h2>{legend_html()}{graph}</section>'
        f'<section id="artifacts"><h2>Artifacts</h2>{_artifacts(artifacts)}</section>'
        f'<section id="recalls"><h2>Recall records</h2>{_recalls(recalls, responses)}</section>'
        f'<section id="responses"><h2>Responses</h2>{_responses(responses)}</section>'
    )
    return layout(subject_id, body, key=key)
