"""A "third" store for the test of ``LOSSGATE_TEST_STORE``: SQLite under a scheme of its own,
which writes down each database it opens, so the test can see the suite reached it."""

from __future__ import annotations

import os
from pathlib import Path

from lossgate.store import register_scheme
from lossgate.store.protocol import Store
from lossgate.store.sqlite import SQLiteStore

PREFIX = "thirdparty-sqlite://"


def _open(url: str, role: str) -> Store:
    path = url[len(PREFIX) :]
    with open(os.environ["THIRD_STORE_OPENED"], "a", encoding="utf-8") as log:
        log.write(f"{path}\n")
    return SQLiteStore(path)


register_scheme(PREFIX, _open)


def store_url(tmp_path: Path) -> str:
    return f"{PREFIX}{tmp_path / 'third.db'}"
