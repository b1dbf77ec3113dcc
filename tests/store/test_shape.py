"""No SQL-carrying code is written twice in ``lossgate/store``.

The scan reads every Python file under ``lossgate/store`` and looks for runs of six
or more consecutive lines of the same shape, in two files or twice in one. A line's
shape is its code with the dialect set aside:

* whitespace, comments, docstrings, blank lines and lines holding only brackets are
  dropped; so are imports, ``__all__`` and ``def`` headers (implementing the protocol
  repeats its signatures by design, and they carry no SQL);
* placeholders are one: ``%s``, ``%(name)s`` and ``?`` read alike, as do
  ``col = ANY(?)`` and ``col IN (?)``, ``IS NOT DISTINCT FROM`` and ``IS``.

A statement that differs between the engines only in those spellings is the same
statement, and belongs in ``lossgate/store/core``.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from pathlib import Path

from tests.support import ROOT

STORE = ROOT / "lossgate" / "store"
RUN = 6

_PLACEHOLDERS = [
    (re.compile(r"%\(\w+\)s"), "?"),
    (re.compile(r"%s"), "?"),
    (re.compile(r"\s*=\s*ANY\s*\(\s*\?\s*\)", re.I), " IN (?)"),
    (re.compile(r"IS NOT DISTINCT FROM", re.I), "IS"),
    (re.compile(r"\s+"), " "),
]
_BRACKETS_ONLY = re.compile(r"^[\s()\[\]{},:;]*$")


def _skipped_lines(source: str) -> set[int]:
    """Line numbers holding no code worth comparing: docstrings, imports, __all__, def headers."""
    skipped: set[int] = set()
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    start = 0  # index of the first token of the current logical line
    for i, tok in enumerate(tokens):
        if tok.type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
            continue
        line = [
            t
            for t in tokens[start:i]
            if t.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
        ]
        start = i + 1
        if not line:
            continue
        first = line[0]
        is_docstring = len(line) == 1 and first.type == tokenize.STRING
        is_header = (
            first.string in ("def", "async", "import", "from", "@")
            or first.string == "class"
            or (first.string == "__all__")
        )
        if is_docstring or is_header:
            skipped.update(range(first.start[0], line[-1].end[0] + 1))
    return skipped


def _comments(source: str) -> dict[int, int]:
    """Line number -> column where its comment starts."""
    return {
        t.start[0]: t.start[1]
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type == tokenize.COMMENT
    }


def shapes(path: Path) -> list[tuple[int, str]]:
    """The file's lines worth comparing, as (line number, shape)."""
    source = path.read_text(encoding="utf-8")
    skipped, comments = _skipped_lines(source), _comments(source)
    out = []
    for number, text in enumerate(source.splitlines(), 1):
        if number in skipped:
            continue
        if number in comments:
            text = text[: comments[number]]
        for pattern, replacement in _PLACEHOLDERS:
            text = pattern.sub(replacement, text)
        text = text.strip()
        if text and not _BRACKETS_ONLY.match(text):
            out.append((number, text))
    return out


def duplicate_runs(root: Path, run: int = RUN) -> list[str]:
    """Every run of at least ``run`` consecutive shapes under ``root`` that occurs twice, as
    ``file:first line-last line = file:first line-last line`` (the longest run, once)."""
    files = {path: shapes(path) for path in sorted(root.rglob("*.py"))}
    seen: dict[tuple[str, ...], list[tuple[Path, int]]] = defaultdict(list)
    for path, lines in files.items():
        for i in range(len(lines) - run + 1):
            seen[tuple(text for _, text in lines[i : i + run])].append((path, i))
    starts = set()  # (file, index, other file, other index) of each window seen twice
    for places in seen.values():
        for n, (path, i) in enumerate(places):
            for other, j in places[n + 1 :]:
                if other != path or abs(j - i) >= run:  # a run overlapping itself is not a copy
                    starts.add((path, i, other, j))
    found = []
    for path, i, other, j in sorted(starts):
        if (path, i - 1, other, j - 1) in starts:
            continue  # inside a longer run, reported from its start
        length = run
        while (path, i + length - run + 1, other, j + length - run + 1) in starts:
            length += 1
        a, b = files[path], files[other]
        found.append(
            f"{path.relative_to(root)}:{a[i][0]}-{a[i + length - 1][0]} = "
            f"{other.relative_to(root)}:{b[j][0]}-{b[j + length - 1][0]}"
        )
    return found


def test_no_run_of_six_lines_is_written_twice_in_the_store() -> None:
    assert duplicate_runs(STORE) == []


# -- the scan can fail -------------------------------------------------------------------

_METHOD = '''
class {cls}:
    def cas_alias(self, tenant_id, subject_id, *, expected, artifact_id, source_epoch, covers_through, at):
        """Compare and swap."""
        cur = self._c.execute(
            "UPDATE aliases SET artifact_id={p}, source_epoch={p}, covers_through={p}, updated_at={p} "
            "WHERE tenant_id={p} AND subject_id={p} AND artifact_id {eq} {p} AND source_epoch={p} "
            "AND covers_through={p} AND {p} >= covers_through",
            (artifact_id, source_epoch, covers_through, at, tenant_id, subject_id,  # {comment}
             expected.parent_artifact_id, expected.source_epoch, expected.covers_through, covers_through),
        )
        return cur.rowcount == 1
'''


def test_the_scan_finds_a_method_copied_into_another_engine_in_its_dialect(tmp_path: Path) -> None:
    (tmp_path / "sqlite").mkdir()
    (tmp_path / "postgres").mkdir()
    (tmp_path / "sqlite" / "tx.py").write_text(_METHOD.format(cls="A", p="?", eq="IS", comment="sqlite"))
    (tmp_path / "postgres" / "tx.py").write_text(
        _METHOD.format(cls="B", p="%s", eq="IS NOT DISTINCT FROM", comment="postgres").replace("    ", "        ")
    )
    assert duplicate_runs(tmp_path) == ["postgres/tx.py:5-12 = sqlite/tx.py:5-12"]


def test_the_scan_finds_a_run_repeated_within_one_file_and_ignores_shorter_ones(tmp_path: Path) -> None:
    body = "\n".join(f"x{i} = f({i})" for i in range(RUN))
    (tmp_path / "one.py").write_text(f"{body}\ny = 0\n{body}\n")
    assert duplicate_runs(tmp_path) == ["one.py:1-6 = one.py:8-13"]
    short = "\n".join(f"x{i} = f({i})" for i in range(RUN - 1))
    (tmp_path / "one.py").write_text(f"{short}\ny = 0\n{short}\n")
    assert duplicate_runs(tmp_path) == []
