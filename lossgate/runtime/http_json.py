"""One JSON POST to an OpenAI-compatible server, with the retry policy every client of
such a server here shares (the chat compressor, the embeddings client).

Rate limits and server errors (408, 425, 429, 5xx, refused or reset connections) are
retried with exponential backoff, honouring ``Retry-After`` up to a cap, inside one
deadline for the whole exchange. Anything else, and a body that is not a JSON object,
raises the caller's error class with one line saying what was wrong (and, for an HTTP
error, the status as its ``http_status`` attribute). Credentials never
appear in a message: the URL is shown without them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from lossgate.errors import LossgateError

__all__ = ["RetryPolicy", "post_json", "error_message", "chat_content"]

_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    timeout_s: float
    max_retries: int
    backoff_s: float
    max_backoff_s: float

    def delay(self, attempt: int, response: httpx.Response | None) -> float:
        delay = self.backoff_s * 2.0**attempt
        if response is not None and (after := response.headers.get("retry-after")):
            try:
                delay = max(delay, float(after))
            except ValueError:
                pass  # an HTTP date: keep our own backoff
        return min(delay, self.max_backoff_s)


def server_client(base_url: str, api_key: Any, timeout_s: float) -> httpx.Client:
    """An ``httpx`` client for an OpenAI-compatible server at ``base_url`` (paths relative to
    it), with ``Authorization: Bearer`` when an ``api_key`` (a pydantic ``SecretStr``) is given."""
    headers = {"Authorization": f"Bearer {api_key.get_secret_value()}"} if api_key else {}
    return httpx.Client(base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout_s)


def post_json(
    client: httpx.Client, path: str, payload: dict[str, Any], *, policy: RetryPolicy, error: type[LossgateError]
) -> dict[str, Any]:
    """POST ``payload`` to ``path`` of ``client``'s base URL; the answer's JSON object."""
    where = client.base_url.copy_with(username=None, password=None)  # never echo credentials
    deadline = time.monotonic() + policy.timeout_s
    attempt = 0
    while True:
        left = deadline - time.monotonic()
        try:
            response = client.post(path, json=payload, timeout=max(left, 0.001))
        except httpx.TimeoutException as exc:
            raise error(f"timeout: no answer from {where} within {policy.timeout_s:g}s ({type(exc).__name__})") from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise error(f"bad URL {where}: {exc}") from exc
        except httpx.TransportError as exc:
            if attempt >= policy.max_retries:
                raise error(f"cannot reach {where}: {type(exc).__name__}") from exc
            response = None
        if response is not None and response.status_code < 300:
            try:
                data = response.json()
            except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested past any sense
                raise error(f"invalid response: not JSON (HTTP {response.status_code})") from exc
            if not isinstance(data, dict):
                raise error("invalid response: the body is not a JSON object")
            return data
        if response is not None and (response.status_code not in _RETRY_STATUS or attempt >= policy.max_retries):
            failure = error(f"HTTP {response.status_code} from {where}: {error_message(response)}")
            failure.http_status = response.status_code  # type: ignore[attr-defined]
            raise failure
        delay = policy.delay(attempt, response)
        if time.monotonic() + delay >= deadline:
            raise error(f"timeout: {where} kept failing for {policy.timeout_s:g}s")
        time.sleep(delay)
        attempt += 1


def error_message(response: httpx.Response) -> str:
    """The server's own one-line explanation of a failed request."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    return (message or response.text or response.reason_phrase)[:200].replace("\n", " ")


def chat_content(data: dict[str, Any], *, error: type[LossgateError], who: str = "the model") -> str:
    """The text of a chat completion's first choice; a missing field, a refusal or a
    truncated answer raises ``error`` with one line saying which."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise error(f"invalid response: missing field {exc} in choices[0].message") from exc
    if not isinstance(choice, dict) or not isinstance(message, dict):
        raise error("invalid response: choices[0].message is not an object")
    if message.get("refusal"):
        raise error(f"{who} refused: {str(message['refusal'])[:200]}")
    if choice.get("finish_reason") == "length":
        raise error(f"truncated: {who} hit its token limit before finishing")
    content = message.get("content")
    if not isinstance(content, str):
        raise error("invalid response: choices[0].message.content is not text")
    return content
