"""A compressor named by a string: how the edges (the CLI's ``--compressor``, the worker
pool's ``compressor=`` spec) turn a setting into a :class:`~lossgate.consolidate.compressor.Compressor`.

Only the edges call :func:`load_compressor`, and they hand it their environment: the
library itself reads no environment variable. In Python, pass a compressor object
instead (``memory.consolidate(..., compressor=ChatCompressor(ChatConfig(...)))``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from lossgate.consolidate.compressor import Compressor
from lossgate.consolidate.deterministic import DeterministicCompressor
from lossgate.errors import ConfigError

__all__ = ["load_compressor"]


def load_compressor(spec: str, *, environ: Mapping[str, str]) -> Compressor:
    """The compressor a name or path designates: ``deterministic`` (the default), ``chat``
    (an OpenAI-compatible model set by ``LOSSGATE_LLM_URL`` and ``LOSSGATE_LLM_MODEL`` in
    ``environ``, see :mod:`lossgate.consolidate.chat`), or ``module:Class`` (called with no
    arguments). Raises :class:`~lossgate.errors.ConfigError` with one line when it cannot be made."""
    if spec == "deterministic":
        return DeterministicCompressor()
    if spec == "chat":
        from lossgate.consolidate.chat import ChatCompressor, ChatConfig  # httpx: only when asked for

        return ChatCompressor(ChatConfig.from_env(environ))
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"compressor {spec!r}: expected deterministic, chat or MODULE:CLASS")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        raise ConfigError(f"compressor {spec}: {exc}") from exc
    if not isinstance(cls, type):  # never call an arbitrary function a spec names (sys:exit)
        raise ConfigError(f"compressor {spec}: {attr} is not a class")
    try:
        made: Compressor = cls()
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"compressor {spec}: {exc}") from exc
    if not callable(getattr(made, "compress", None)):
        raise ConfigError(f"compressor {spec}: {type(made).__name__} has no compress(request) method")
    return made
