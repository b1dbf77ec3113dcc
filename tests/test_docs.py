"""The manual holds together: every relative link of the README and of the pages under docs/
names a file that exists (and a heading there, where it names one), every page is in
mkdocs.yml's nav, and the CLI reference the build writes lists every command and option.

``make docs`` (``mkdocs build --strict``) checks the pages' links too, but only where mkdocs is
installed and only for the pages; the README's links, read on GitHub and in the source, are
checked here alone.
"""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
HOOKS = DOCS / "hooks"
PAGES = sorted(p for p in DOCS.rglob("*.md") if HOOKS not in p.parents)

FENCE = re.compile(r"^ *```.*?^ *```", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
INLINE = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(\S+)", re.M)
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)


def cli_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", HOOKS / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def slug(heading: str) -> str:
    """A heading's anchor as Python-Markdown's toc extension (mkdocs) writes it; GitHub's is the
    same for the headings here (words, spaces, hyphens, underscores, code spans)."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def prose(path: Path) -> str:
    """The file's text without its code: a link written in a code block or span is an example."""
    return CODE_SPAN.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    if path == DOCS / "reference" / "cli.md":
        text += "\n" + cli_reference().markdown()
    return {slug(heading) for heading in HEADING.findall(text)}


def links(path: Path) -> list[str]:
    text = prose(path)
    return INLINE.findall(text) + DEFINITION.findall(text)


@pytest.mark.parametrize("source", [ROOT / "README.md", *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_a_file_and_heading_that_exist(source: Path) -> None:
    broken = []
    for target in links(source):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        name, _, anchor = target.partition("#")
        where = (source.parent / name).resolve() if name else source
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(f"{target}: no heading #{anchor} in {where.relative_to(ROOT)}")
    assert not broken, broken
    assert source != ROOT / "README.md" or links(source), "the README links to the manual"


def test_every_page_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = config[config.index("\nnav:") :]
    nav = nav[: re.search(r"\n\S", nav[1:]).end()]  # up to the next top-level key
    listed = set(re.findall(r":\s*(\S+\.md)\s*$", nav, re.M))
    pages = {str(p.relative_to(DOCS)) for p in PAGES}
    assert pages - listed == set(), "pages missing from mkdocs.yml's nav"
    assert listed - pages == set(), "nav entries with no page"


def test_the_cli_reference_lists_every_command_and_option() -> None:
    reference = cli_reference()
    written = reference.markdown()
    assert reference.MARKER in (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    commands = list(reference.commands())
    assert len(commands) > 60  # the whole tree, not its root alone
    for path, command, ctx in commands:
        assert re.search(rf"^#+ {re.escape(path)}$", written, re.M), f"no section for {path}"
        section = written[re.search(rf"^#+ {re.escape(path)}$", written, re.M).end() :]
        section = section[: re.search(r"^#+ lossgate", section + "\n# lossgate", re.M).start()]
        for param in command.get_params(ctx):
            if "--help" in param.opts:
                continue
            for opt in [*param.opts, *param.secondary_opts]:
                shown = opt if opt.startswith("-") else (param.metavar or opt)
                assert shown in section, f"{path}: {opt} is not in its section"


def test_the_getting_started_page_includes_the_readme_quick_start() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    assert '--8<-- "README.md:quick-start"' in page
    start, end = readme.index("--8<-- [start:quick-start]"), readme.index("--8<-- [end:quick-start]")
    assert "<!-- quick start" in readme[start:end] and "<!-- /quick start -->" in readme[start:end]


def test_the_python_reference_documents_every_public_name():
    """Each name of ``lossgate.__all__`` has its entry on the Python API page, and the page
    names nothing else."""
    import lossgate

    page = (ROOT / "docs" / "reference" / "python.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: lossgate\.(\w+)$", page, flags=re.M))
    assert sorted(set(lossgate.__all__) - documented) == []
    assert sorted(documented - set(lossgate.__all__)) == []


def test_the_cli_reference_opening_names_every_top_level_command() -> None:
    import typer.main

    from lossgate.cli import app

    opening = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8").split("\n\n", 2)[1]
    missing = [name for name in typer.main.get_command(app).commands if f"`{name}" not in opening]
    assert missing == [], f"the CLI reference's opening list leaves out {missing}"
