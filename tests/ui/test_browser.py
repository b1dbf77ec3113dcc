"""The inspection page in a real browser: headless Chromium (Debian's ``chromium``) loads
the demo subject's page from a real server, and the test checks, in the DOM Chromium
built and in the pixels of its screenshot, that the refused attempt's violation and the
stale lineage node are shown. The screenshot is kept: under the test's tmp dir, and
copied to ``$LOSSGATE_ARTIFACTS_DIR`` when that is set (``.ci/run`` sets it and prints it).

No browser here: the test skips, saying so; with ``LOSSGATE_REQUIRE_BROWSER=1`` (``.ci/run``,
which installs ``chromium`` when it is missing) it fails instead. ``LOSSGATE_CHROMIUM``
names another binary.

Chromium's command line cannot send a header, so the page is served behind a small ASGI
wrapper that adds the key's ``Authorization`` header to each request (the login form's
cookie flow is tested over HTTP in ``test_page.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.inspection import Page

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--window-size=1280,2400",
)
# colours only these marks use (lossgate/service/ui/page.py)
STALE_FILL = (0xFF, 0x7A, 0x45)
VIOLATION_FILL = (0xFF, 0xA3, 0x9E)


def browser() -> str:
    named = os.environ.get("LOSSGATE_CHROMIUM")
    found = shutil.which(named) if named else next((p for p in map(shutil.which, BROWSERS) if p), None)
    if found:
        return found
    reason = (
        f"no headless browser: none of {', '.join(BROWSERS)} is on PATH (apt-get install chromium; "
        "or LOSSGATE_CHROMIUM=/path/to/chrome)"
    )
    if os.environ.get("LOSSGATE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}, although LOSSGATE_REQUIRE_BROWSER=1")
    pytest.skip(reason)


def with_bearer(app: Any, secret: str) -> Any:
    """``app``, with ``Authorization: Bearer <secret>`` added to each HTTP request."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = [h for h in scope["headers"] if h[0].lower() != b"authorization"]
            scope = {**scope, "headers": [*headers, (b"authorization", f"Bearer {secret}".encode())]}
        await app(scope, receive, send)

    return wrapped


@pytest.fixture
def served_with_key(page: Page) -> Iterator[str]:
    from lossgate.service import create_app
    from lossgate.testing.service import serving

    with serving(with_bearer(create_app(page.memory, close_memory=False), page.key())) as url:
        yield url


def chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [binary, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, f"{binary} exited {run.returncode}: {run.stderr[-2000:]}"
    return run


def pixels_of(png: Path, colour: tuple[int, int, int]) -> int:
    from PIL import Image

    with Image.open(png) as image:
        rgb = image.convert("RGB")
        return sum(n for n, c in (rgb.getcolors(maxcolors=1 << 24) or []) if c == colour)


def test_chromium_shows_the_refused_violation_and_the_stale_node(
    page: Page, served_with_key: str, tmp_path: Path
) -> None:
    binary = browser()
    url = f"{served_with_key}/ui/subjects/{page.demo.subject}"

    dom = chromium(binary, tmp_path / "profile-dom", "--dump-dom", url).stdout
    assert f'<code class="violation">{page.demo.violation}</code>' in dom, dom[:2000]
    assert f'data-id="{page.demo.stale_artifact}" data-state="stale"' in dom
    assert "STALE · stale" in dom
    assert "<script" not in dom  # the hostile texts stayed text

    shot = tmp_path / f"inspection-page-{page.store}.png"
    chromium(binary, tmp_path / "profile-shot", f"--screenshot={shot}", url)
    assert shot.exists() and shot.stat().st_size > 10_000
    keep = os.environ.get("LOSSGATE_ARTIFACTS_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    # both marks are painted within the first 2,400 pixels, not merely present in the DOM
    assert pixels_of(shot, STALE_FILL) > 500, f"no stale node painted in {shot}"
    assert pixels_of(shot, VIOLATION_FILL) > 500, f"no violation painted in {shot}"
