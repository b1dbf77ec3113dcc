"""The hypothesis profiles of ``tests/conftest.py``: HYPOTHESIS_PROFILE picks ``dev`` (the
default) or ``ci`` (.ci/run), neither has a per-example deadline, and so no test carries its
own ``deadline=None``. The slow property below runs in a child pytest: under hypothesis' own
default profile it fails on its deadline, under each of ours it passes."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]

# One example that takes longer than hypothesis' default deadline (200 ms, 250 on its first run).
SLOW_PROPERTY = """
import os, time
from hypothesis import given, settings, strategies as st

if os.environ["LOAD_PROFILE"]:
    settings.load_profile(os.environ["LOAD_PROFILE"])

@given(st.just(None))
def test_a_slow_example(_):
    time.sleep(0.4)

def test_the_profile_is_the_one_asked_for():
    assert settings.get_current_profile_name() == os.environ["EXPECT_PROFILE"]
"""


def _child_pytest(
    tmp_path: Path, name: str, *, profile: str | None, expect: str, load: str = "", conftest: bool = True
) -> subprocess.CompletedProcess[str]:
    """A child pytest of the slow property, with this repository's conftest as a plugin."""
    workdir = tmp_path / name  # the child's own working directory (where .hypothesis/ would go)
    workdir.mkdir()
    (workdir / "test_slow.py").write_text(SLOW_PROPERTY, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE"}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        EXPECT_PROFILE=expect,
        LOAD_PROFILE=load,
    )
    if profile is not None:
        env["HYPOTHESIS_PROFILE"] = profile
    plugin = ["-p", "tests.conftest"] if conftest else []
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            *plugin,
            "-c",
            os.devnull,
            "--rootdir",
            str(workdir),
            "test_slow.py",
        ],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_this_run_uses_the_profile_the_environment_names_without_a_deadline() -> None:
    assert settings.get_current_profile_name() == (os.environ.get("HYPOTHESIS_PROFILE") or "dev")
    assert settings.default.deadline is None
    ci, dev = settings.get_profile("ci"), settings.get_profile("dev")
    assert ci.deadline is None and dev.deadline is None
    assert ci.derandomize and ci.database is None  # the same examples every run, nothing kept
    assert not dev.derandomize and dev.database is not None  # new examples, a failure replayed


@pytest.mark.slow
def test_a_slow_example_passes_under_both_profiles_and_fails_under_hypothesis_defaults(tmp_path: Path) -> None:
    control = _child_pytest(tmp_path, "control", profile=None, expect="default", load="default", conftest=False)
    assert control.returncode == 1 and "DeadlineExceeded" in control.stdout, control.stdout[-2000:]
    for name, profile in (("dev", None), ("ci", "ci")):
        done = _child_pytest(tmp_path, name, profile=profile, expect=name)
        assert done.returncode == 0 and "2 passed" in done.stdout, (name, done.stdout[-2000:], done.stderr[-2000:])


@pytest.mark.slow
def test_an_unknown_profile_name_is_a_usage_error(tmp_path: Path) -> None:
    done = _child_pytest(tmp_path, "unknown", profile="nightly", expect="nightly")
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert "HYPOTHESIS_PROFILE='nightly'" in done.stderr and "dev, ci" in done.stderr, done.stderr[-2000:]


def _deadlines_passed_to_settings(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name == "settings" and any(k.arg == "deadline" for k in node.keywords):
                lines.append(node.lineno)
    return lines


def test_no_test_sets_its_own_deadline() -> None:
    found = {
        str(p.relative_to(ROOT)): lines
        for p in sorted((ROOT / "tests").rglob("*.py"))
        if (lines := _deadlines_passed_to_settings(p))
    }
    assert found == {}, f"the profiles in tests/conftest.py hold the deadline: {found}"
