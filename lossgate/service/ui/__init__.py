"""The inspection page: ``/ui``, HTML rendered on the server, read-only.

``GET /ui`` lists the key's tenant's subjects; ``GET /ui/subjects/{subject_id}`` shows one:
the clock and the alias, the published artifact with its claims and summary, every
attempt with its outcome and violations (which fact was lost or changed), the lineage
as an SVG graph with stale artifacts marked, and the recall records.

**Keys.** The page takes the same API keys as the API, and needs the ``read`` scope. A
key comes either in ``Authorization: Bearer <key>`` (scripts, curl) or from the login
form: ``POST /ui/login`` with the key checks it and stores it in a cookie that is
``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page sends it),
``Path=/ui`` (the API under ``/v1`` never receives it: the API takes keys only in the
header, so a cookie can never make an API call for a visitor) and ``Secure`` when the page
is served over HTTPS. The key is checked again on every request (a revoked key stops
working at once). Without a valid key every page answers 401 with the login form; a key
without ``read`` gets 403.

**CSRF.** Nothing under ``/ui`` changes memory. The two POSTs only set or clear the
page's own cookie; both refuse a request whose ``Origin`` (or, lacking it, ``Referer``)
names another origin, so another site cannot log a visitor in with its own key.

**Tenants.** As in the API, the tenant is the key's: a subject that is not the tenant's
(another tenant's, or none at all) is the same 404, with the same message.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from lossgate.errors import NotFound
from lossgate.model.api_keys import ApiKey
from lossgate.service.auth import bearer_token, memory_of
from lossgate.service.models import ArtifactOut, KeyOut
from lossgate.service.operations import TenantMemory
from lossgate.service.routes import Subject
from lossgate.service.ui.graph import GraphArtifact, lineage_svg
from lossgate.service.ui.page import HEADERS, login_page, message_page, subject_page, subjects_page

__all__ = ["router", "FORM_PATHS", "COOKIE"]

COOKIE = "lossgate_key"
COOKIE_MAX_AGE = 8 * 3600
LOGIN = "/ui/login"
FORM_PATHS = frozenset({LOGIN})  # the body limit lets an HTML form through here (lossgate.service.bodies)
MAX_LOGIN_BODY = 4096
MAX_GRAPH_ARTIFACTS = 40

router = APIRouter(prefix="/ui", include_in_schema=False)


def _html(body: str, status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers={**HEADERS, **(headers or {})})


_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="lossgate"'}


def _secret(request: Request) -> str | None:
    headers = request.headers.getlist("authorization")
    if headers:
        return bearer_token(headers)  # read as strictly as the API reads it
    return request.cookies.get(COOKIE)


def _count_failure(request: Request, reason: str) -> None:
    metrics = getattr(request.app.state, "metrics", None)
    if metrics is not None:
        metrics.auth_failures.labels(reason=reason).inc()


def _reader(request: Request) -> tuple[TenantMemory, ApiKey] | HTMLResponse:
    """The tenant's memory and the key, for a request with an active key with ``read``; else
    the page to answer with (401 with the login form, or 403)."""
    secret = _secret(request)
    if secret is None:
        _count_failure(request, "missing")
        return _html(login_page(), 401, _CHALLENGE)
    key = memory_of(request).admin.authenticate(secret)
    if key is None:
        _count_failure(request, "invalid")
        response = _html(login_page("The API key is invalid or revoked."), 401, _CHALLENGE)
        if request.cookies.get(COOKIE) is not None:
            _forget(response, request)
        return response
    request.state.key_id = key.key_id
    if "read" not in key.scopes:
        return _html(
            message_page("forbidden", f"This API key lacks the 'read' scope (it has: {', '.join(key.scopes)})."), 403
        )
    return TenantMemory.of_key(memory_of(request), key), key


def _same_origin(request: Request) -> bool:
    """False when the request says it comes from another origin (``Origin``, else ``Referer``)."""
    source = request.headers.get("origin") or request.headers.get("referer")
    if source is None:
        return True  # not a browser's cross-site form post (browsers send Origin on POST)
    if source == "null":
        return False
    parts = urlsplit(source)
    return f"{parts.scheme}://{parts.netloc}".lower() == f"{request.url.scheme}://{request.url.netloc}".lower()


def _forget(response: Response, request: Request) -> None:
    response.delete_cookie(COOKIE, path="/ui", secure=request.url.scheme == "https", httponly=True, samesite="strict")


@router.get("", response_class=HTMLResponse)
def subjects(request: Request) -> HTMLResponse:
    """The key's tenant's subjects, each a link to its page."""
    found = _reader(request)
    if isinstance(found, HTMLResponse):
        return found
    memory, key = found
    return _html(subjects_page(KeyOut.of(key), memory.subjects().subjects))


@router.get("/login", response_class=HTMLResponse)
def login_form() -> HTMLResponse:
    return _html(login_page())


@router.post("/login")
async def login(request: Request) -> Response:
    """Check the key posted by the form and keep it in the page's cookie; then go to ``/ui``."""
    if not _same_origin(request):
        return _html(message_page("forbidden", "A login must come from this page's own form."), 403)
    raw = await request.body()
    if len(raw) > MAX_LOGIN_BODY:
        return _html(login_page("That is not an API key."), 400)
    try:
        form = parse_qs(raw.decode("utf-8"), max_num_fields=4)
    except (UnicodeDecodeError, ValueError):
        return _html(login_page("That is not an API key."), 400)
    secret = (form.get("key") or [""])[0].strip()
    key = memory_of(request).admin.authenticate(secret) if secret else None
    if key is None:
        _count_failure(request, "invalid" if secret else "missing")
        return _html(login_page("The API key is invalid or revoked."), 401, _CHALLENGE)
    if "read" not in key.scopes:
        return _html(login_page(f"This API key lacks the 'read' scope (it has: {', '.join(key.scopes)})."), 403)
    response = RedirectResponse("/ui", status_code=303, headers=HEADERS)
    response.set_cookie(
        COOKIE,
        secret,
        max_age=COOKIE_MAX_AGE,
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
def logout(request: Request) -> Response:
    """Clear the page's cookie (the key itself stays valid: ``lossgate keys revoke`` ends it)."""
    if not _same_origin(request):
        return _html(message_page("forbidden", "A logout must come from this page's own form."), 403)
    response = RedirectResponse(LOGIN, status_code=303, headers=HEADERS)
    _forget(response, request)
    return response


@router.get("/subjects/{subject_id}", response_class=HTMLResponse)
def subject(subject_id: Subject, request: Request) -> HTMLResponse:
    """One subject: clock and alias, published artifact, attempts, lineage graph, recalls and
    the responses made after them."""
    found = _reader(request)
    if isinstance(found, HTMLResponse):
        return found
    memory, key = found
    key_out = KeyOut.of(key)
    if subject_id not in memory.subjects().subjects:
        # the API's answer for an id the tenant does not have, whoever else may have it
        return _html(message_page("not found", f"subject {subject_id!r} does not exist"), 404)
    clock = memory.clock(subject_id)
    attempts = memory.attempts(subject_id)
    artifacts = memory.artifacts(subject_id)
    published: ArtifactOut | None = None
    published_error = None
    if clock.alias.artifact_id is not None:
        published = next((a for a in artifacts if a.artifact_id == clock.alias.artifact_id), None)
        if published is None:
            published_error = f"the alias names {clock.alias.artifact_id}, which is not stored"
    t = memory.tenant_id
    inner = memory.memory
    graph_artifacts = []
    for a in artifacts[-MAX_GRAPH_ARTIFACTS:]:
        try:
            view = inner.admin.lineage(t, subject_id, a.artifact_id)
        except NotFound:
            continue
        graph_artifacts.append(
            GraphArtifact(a.artifact_id, a.state, tuple((e.input_kind, e.input_id) for e in view.edges))
        )
    states: dict[str, str] = {}
    wanted = {i for g in graph_artifacts for k, i in g.inputs if k in ("event", "fact")}
    if wanted:
        for f in inner.facts(t, subject_id, statuses=None):
            if f.fact_id in wanted:
                states[f.fact_id] = f.status
        after = 0
        while True:  # events a page at a time, only their states kept
            page = inner.events(t, subject_id, after_seq=after, limit=1000)
            for e in page:
                if e.event_id in wanted:
                    states[e.event_id] = e.state
            if len(page) < 1000:
                break
            after = page[-1].seq
    graph = lineage_svg(graph_artifacts, states)
    hidden = len(artifacts) - len(graph_artifacts)
    if hidden > 0:
        graph += (
            f'<p class="empty">The graph shows the newest {len(graph_artifacts)} artifacts of {len(artifacts)}.</p>'
        )
    return _html(
        subject_page(
            key=key_out,
            subject_id=subject_id,
            clock=clock,
            published=published,
            published_error=published_error,
            attempts=attempts,
            artifacts=artifacts,
            graph=graph,
            recalls=memory.recalls(subject_id, limit=50),
            responses=memory.responses(subject_id, limit=50),
        )
    )
