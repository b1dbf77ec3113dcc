"""The service's OpenAPI document as committed in ``docs/openapi.json``.

``python -m lossgate.service.openapi > docs/openapi.json`` writes it again after a change
to the routes or models; ``tests/service/test_openapi.py`` fails while the document the
server serves differs from the committed one.
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["document", "render"]


def document() -> dict[str, Any]:
    """The OpenAPI document of the service (no database is opened)."""
    from lossgate.service.app import routes

    return routes().openapi()


def render(doc: dict[str, Any]) -> str:
    """The document as committed: sorted keys, two-space indent, a final newline."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(document()))
