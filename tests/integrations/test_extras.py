"""Each integration's framework is its own extra: ``import lossgate`` loads none of them, and an
integration whose framework is missing says which extra installs it."""

from __future__ import annotations

import subprocess
import sys

import pytest

INTEGRATIONS = [
    ("lossgate.integrations.langgraph", "langgraph", "langgraph", "LangGraph"),
    ("lossgate.integrations.openai_agents", "agents", "openai-agents", "OpenAI Agents SDK"),
    ("lossgate.integrations.pydantic_ai", "pydantic_ai", "pydantic-ai", "PydanticAI"),
]


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("module, framework, extra, name", INTEGRATIONS)
def test_a_missing_framework_is_a_config_error_naming_the_extra(module, framework, extra, name):
    done = python(
        f"import sys; sys.modules[{framework!r}] = None\n"  # as if it were not installed
        "from lossgate import ConfigError\n"
        f"try:\n    import {module}\nexcept ConfigError as exc:\n    print(exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"lossgate's {name} integration needs {name}: pip install 'lossgate[{extra}]'"


def test_importing_lossgate_and_an_integration_loads_only_that_framework():
    done = python(
        "import sys, lossgate, lossgate.integrations.langgraph\n"
        "print(sorted(m for m in ('langgraph', 'agents', 'pydantic_ai') if m in sys.modules))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['langgraph']"
