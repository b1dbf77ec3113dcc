"""lossgate as the memory of agent frameworks, one module each, through the public API
(:func:`lossgate.open`, :meth:`~lossgate.Memory.append`, :meth:`~lossgate.Memory.recall`,
:meth:`~lossgate.Memory.delete_event`, :meth:`~lossgate.Memory.guard`; and two reads from
:attr:`~lossgate.Memory.admin`: the subject's clock, to see whether anything changed since the
last read, and the tenant's subjects, for a search that names none):

* :mod:`lossgate.integrations.langgraph`: ``LossgateStore``, a LangGraph ``BaseStore``
  (extra ``langgraph``);
* :mod:`lossgate.integrations.openai_agents`: ``LossgateSession``, a session of the OpenAI
  Agents SDK, and ``recall_tool`` (extra ``openai-agents``);
* :mod:`lossgate.integrations.pydantic_ai`: ``memory_toolset`` (remember, recall, forget,
  guard) and ``LossgateMessageHistory`` for PydanticAI agents (extra ``pydantic-ai``).

Each writes into the raw layer (events) of the subject it is given, so what an agent keeps
there is memory like any other: searched by recall, consolidated, erased by deletion. The
framework is imported when its module is: ``import lossgate`` never loads one.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from lossgate.errors import ConfigError

__all__ = ["require"]


def require(module: str, *, extra: str, framework: str) -> ModuleType:
    """Import ``module`` of ``framework``, or raise :class:`~lossgate.errors.ConfigError`
    naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"lossgate's {framework} integration needs {framework}: pip install 'lossgate[{extra}]'"
        ) from exc
