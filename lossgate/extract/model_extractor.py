"""A model that proposes facts from events, over OpenAI-compatible chat completions.

It speaks the judge's protocol (:mod:`lossgate.judge.model_judge`: its own server, model and
key; temperature 0; an answer under a JSON schema) with its own versioned prompt file
(``prompts/extract-v1.txt``). What it proposes goes through :func:`lossgate.extract.extract`
like any extractor's: typed under the registry, refused and recorded when the predicate
is unknown or the value mistyped, bounded by its sources' trust. A candidate citing an
event it was not shown is dropped. A server that fails, refuses or answers outside the
schema raises :class:`ExtractionError`, and nothing is recorded (the events stay unread).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

import httpx

from lossgate.errors import LossgateError
from lossgate.extract.cues import Candidate
from lossgate.judge.model_judge import JudgeConfig
from lossgate.model.records import Event
from lossgate.model.registry import Registry
from lossgate.runtime.http_json import RetryPolicy, chat_content, post_json, server_client

__all__ = ["ExtractionError", "ModelExtractor", "EXTRACT_PROMPT_VERSION"]

EXTRACT_PROMPT_VERSION = "extract-v1"

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["facts"],
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["predicate", "value", "qualifiers", "source_event_ids"],
                "properties": {
                    "predicate": {"type": "string"},
                    "value": {"type": "string", "description": "the value as JSON text"},
                    "qualifiers": {"type": "object", "additionalProperties": {"type": "string"}},
                    "source_event_ids": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}


class ExtractionError(LossgateError):
    """The model extractor could not answer: nothing was recorded, the events stay unread."""


class ModelExtractor:
    """Proposes typed facts from events with a model (configured like a judge: :class:`JudgeConfig`)."""

    def __init__(self, config: JudgeConfig, *, client: httpx.Client | None = None) -> None:
        self.config = config
        self.name = f"model:{config.model}/{EXTRACT_PROMPT_VERSION}"
        self._prompt = (resources.files("lossgate.extract") / "prompts" / f"{EXTRACT_PROMPT_VERSION}.txt").read_text(
            encoding="utf-8"
        )
        self._policy = RetryPolicy(config.timeout_s, config.max_retries, config.backoff_s, config.max_backoff_s)
        self._client = client or server_client(config.base_url, config.api_key, config.timeout_s)

    def close(self) -> None:
        self._client.close()

    def propose(self, events: Sequence[Event], registry: Registry) -> list[Candidate]:
        document = {
            "predicates": [
                {
                    "name": p.name,
                    "type": p.value_type,
                    "description": p.description,
                    "qualifiers": list(p.qualifiers),
                    **({"values": list(p.enum_values)} if p.enum_values else {}),
                }
                for p in registry.predicates.values()
            ],
            "messages": [
                {"event_id": e.event_id, "actor": e.actor, "trust": e.trust, "text": e.text} for e in events if e.text
            ],
        }
        payload: dict[str, Any] = {
            "model": self.config.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": self._prompt},
                {"role": "user", "content": json.dumps(document, ensure_ascii=False)},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "lossgate_facts", "strict": True, "schema": _SCHEMA},
            }
            if self.config.response_format == "json_schema"
            else {"type": "json_object"},
        }
        data = post_json(self._client, "chat/completions", payload, policy=self._policy, error=ExtractionError)
        return _candidates(data, {e.event_id for e in events})


def _candidates(data: dict[str, Any], shown: set[str]) -> list[Candidate]:
    content = chat_content(data, error=ExtractionError, who="the extractor")
    try:
        answer = json.loads(content)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ExtractionError("invalid output: the answer is not JSON") from exc
    facts = answer.get("facts") if isinstance(answer, dict) else None
    if not isinstance(facts, list):
        raise ExtractionError("invalid output: missing field facts (a list)")
    out = []
    for i, item in enumerate(facts):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("predicate"), str)
            or not isinstance(item.get("value"), str)
            or not isinstance(item.get("source_event_ids"), list)
        ):
            raise ExtractionError(f"invalid output: facts.{i} lacks predicate, value or source_event_ids")
        try:
            value = json.loads(item["value"])
        except (json.JSONDecodeError, RecursionError):
            value = item["value"]  # a bare string value
        sources = tuple(str(s) for s in item["source_event_ids"])
        qualifiers = item.get("qualifiers") or {}
        if not sources or any(s not in shown for s in sources) or not isinstance(qualifiers, dict):
            continue  # cites an event it was not shown: dropped whole, never attached to the rest
        out.append(
            Candidate(item["predicate"], value, sources, tuple(sorted((str(k), str(v)) for k, v in qualifiers.items())))
        )
    return out
