"""The manual's client snippet (docs/service.md, "Client") runs as written against a served memory."""

from __future__ import annotations

import contextlib
import io
import re

from tests.support import ROOT
from tests.support.client import Served

URL, KEY = "http://127.0.0.1:8080", "lg_3f9a0c2b7d41_Jx..."


def snippet() -> str:
    text = (ROOT / "docs" / "service.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Client\n") :]
    (code,) = re.findall(r"```python\n(.*?)```", section[: section.index("\n## ", 5)], flags=re.S)
    assert URL in code and KEY in code
    return code


def test_the_manual_client_snippet_runs_against_a_served_memory(served: Served) -> None:
    code = snippet().replace(URL, served.url).replace(KEY, served.key(served.tenant()))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "docs/service.md (Client)", "exec"), {})
    lines = printed.getvalue().splitlines()
    assert lines[0] == "Memory of user-17 (raw memory: no fresh summary)"
    assert "- food.peanuts_allowed: false (basis=allergy, severity=critical)" in lines
    assert lines[-2:] == ["False", "not_found"]
