"""The inspection page over real HTTP (httpx): keys by header or login cookie, 401 and 403,
escaping, another tenant's subject, and the recall records' JSON route."""

from __future__ import annotations

import re
from urllib.parse import quote

import httpx

from lossgate.model.records import NewEvent
from tests.support.inspection import MARKUP, Page


def client(page: Page, secret: str | None = None, **headers: str) -> httpx.Client:
    if secret is not None:
        headers["Authorization"] = f"Bearer {secret}"
    return httpx.Client(base_url=page.url, headers=headers, timeout=30, follow_redirects=False)


def subject_path(page: Page) -> str:
    return f"/ui/subjects/{page.demo.subject}"


def test_the_page_shows_the_refused_attempt_and_the_stale_artifact(page: Page) -> None:
    with client(page, page.key()) as c:
        r = c.get(subject_path(page))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html")
    assert "script-src" not in r.headers["content-security-policy"]  # default-src 'none': no script at all
    assert r.headers["cache-control"] == "no-store"
    html = r.text
    for section in ("clock", "published", "attempts", "lineage", "artifacts", "recalls"):
        assert f'<section id="{section}">' in html
    # the refused attempt names the fact that changed
    assert f'<code class="violation">{page.demo.violation}</code>' in html
    assert re.search(r'<tr class="attempt refused" data-status="rejected">', html)
    # the stale artifact is a marked node of the graph, and the legend explains the mark
    assert (
        f'<g class="node artifact stale state-stale" data-id="{page.demo.stale_artifact}" data-state="stale">' in html
    )
    assert "STALE · stale" in html and 'class="legend"' in html
    # the revoked input is drawn as gone; the claims and the summary are there
    assert 'data-id="e3" data-state="revoked"' in html
    assert "food.peanuts_allowed" in html and '<pre class="summary">' in html
    # the recall records, the query among them (escaped)
    assert "raw_fallback" in html and "Can I order the satay?" in html


def test_no_key_a_bad_key_or_a_key_without_read_is_refused(page: Page) -> None:
    with client(page) as c:
        for path in ("/ui", subject_path(page)):
            r = c.get(path)
            assert r.status_code == 401 and 'action="/ui/login"' in r.text, path
            assert r.headers["www-authenticate"] == 'Bearer realm="lossgate"'
        assert c.get("/ui", headers={"Authorization": "Basic dXNlcjpwYXNz"}).status_code == 401
        assert c.get("/ui", headers={"Authorization": "Bearer lg_nope_x"}).status_code == 401
    with client(page) as c:
        c.cookies.set("lossgate_key", "lg_abcdef123456_" + "x" * 43)
        assert c.get("/ui").status_code == 401
    revoked = page.key()
    key = page.memory.admin.authenticate(revoked)
    assert key is not None
    page.memory.admin.revoke_api_key(page.demo.tenant, key.key_id)
    with client(page, revoked) as c:
        assert c.get(subject_path(page)).status_code == 401
    with client(page, page.key(None, "write", "admin")) as c:
        r = c.get(subject_path(page))
        assert r.status_code == 403 and "read" in r.text and page.demo.subject not in r.text


def test_everything_is_escaped(page: Page) -> None:
    hostile = "x\"'><script>alert(1)"  # a subject id holds no whitespace; a "/" would be a path separator
    t = page.demo.tenant
    page.memory.append([NewEvent(tenant_id=t, subject_id=hostile, event_id="x1", text=MARKUP)])
    with client(page, page.key()) as c:
        listing = c.get("/ui")
        one = c.get(f"/ui/subjects/{quote(hostile, safe='')}")
        demo = c.get(subject_path(page))
    assert listing.status_code == 200 and one.status_code == 200 and demo.status_code == 200
    for r in (listing, one, demo):
        assert "<script" not in r.text and 'onmouseover="' not in r.text
    shown = "x&quot;&#x27;&gt;&lt;script&gt;alert(1)"
    assert shown in listing.text and shown in one.text
    assert 'href="/ui/subjects/x%22%27%3E%3Cscript%3Ealert%281%29"' in listing.text
    # the event text in the summary, the recall query
    assert demo.text.count("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&lt;b onmouseover=&quot;x&quot;&gt;") >= 2


def test_another_tenants_subject_is_the_same_404_as_a_missing_one(page: Page) -> None:
    other = page.key(f"{page.demo.tenant}-other", "read", "write", "admin")
    with client(page, other) as c:
        theirs = c.get(subject_path(page))
        missing = c.get("/ui/subjects/no-such-subject")
        listing = c.get("/ui")
        api = c.get(f"/v1/subjects/{page.demo.subject}/recalls")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.text.replace(page.demo.subject, "X") == missing.text.replace("no-such-subject", "X")
    assert page.demo.violation not in theirs.text and page.demo.stale_artifact not in theirs.text
    assert listing.status_code == 200 and page.demo.subject not in listing.text
    assert api.status_code == 200 and api.json() == []  # the API: another tenant's subject reads as empty


def test_the_login_form_keeps_the_key_in_an_httponly_strict_cookie(page: Page) -> None:
    secret = page.key()
    with client(page) as c:
        form = c.get("/ui/login")
        assert form.status_code == 200 and 'name="key"' in form.text and 'type="password"' in form.text
        wrong = c.post("/ui/login", data={"key": "lg_nope"})
        assert wrong.status_code == 401 and "invalid or revoked" in wrong.text and "set-cookie" not in wrong.headers
        # a form posted from another site's page is refused (login CSRF)
        forged = c.post("/ui/login", data={"key": secret}, headers={"Origin": "https://evil.example"})
        assert forged.status_code == 403 and "set-cookie" not in forged.headers
        r = c.post("/ui/login", data={"key": secret}, headers={"Origin": page.url})
        assert r.status_code == 303 and r.headers["location"] == "/ui"
        cookie = r.headers["set-cookie"]
        assert cookie.startswith("lossgate_key=")
        attributes = {a.strip().lower() for a in cookie.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/ui"} <= attributes
        assert "secure" not in attributes  # plain HTTP here; Secure when served over HTTPS
        assert c.cookies.get("lossgate_key") == secret
        page_r = c.get(subject_path(page))
        assert page_r.status_code == 200 and page.demo.violation in page_r.text
        # the cookie is the page's only: the API takes a key from the header alone
        with client(page) as api:
            api.cookies.set("lossgate_key", secret)
            assert api.get(f"/v1/subjects/{page.demo.subject}/clock").status_code == 401
        out = c.post("/ui/logout", headers={"Origin": page.url})
        assert out.status_code == 303 and "lossgate_key=" in out.headers["set-cookie"]
        assert c.cookies.get("lossgate_key") is None
        assert c.get(subject_path(page)).status_code == 401
        # a key without read cannot log in
        writer = page.key(None, "write")
        assert c.post("/ui/login", data={"key": writer}).status_code == 403


def test_the_recalls_route_lists_the_records_newest_first(page: Page) -> None:
    with client(page, page.key()) as c:
        r = c.get(f"/v1/subjects/{page.demo.subject}/recalls")
        assert r.status_code == 200, r.text
        records = r.json()
        assert [x["mode"] for x in records] == ["summary", "raw_fallback"]
        assert records[1]["query"].startswith("Can I order the satay?") and records[1]["redacted"] is False
        assert records[0]["alias"]["artifact_id"] == page.demo.stale_artifact
        assert len(c.get(f"/v1/subjects/{page.demo.subject}/recalls", params={"limit": 1}).json()) == 1
        assert c.get(f"/v1/subjects/{page.demo.subject}/recalls", params={"limit": 0}).status_code == 422
    with client(page) as c:
        assert c.get(f"/v1/subjects/{page.demo.subject}/recalls").status_code == 401
