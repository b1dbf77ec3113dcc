"""The judge's client: a narrative in, the statements it makes out, over chat completions.

``POST {base_url}/chat/completions`` at temperature 0, asking for JSON that follows
:data:`STATEMENTS_SCHEMA` (``response_format`` ``json_schema``; ``json_object`` for
servers without schema support, then parsed as strictly). The prompt is a versioned file
in the package (``prompts/judge-v1.txt``); its version goes into every manifest the
judge has read. Transport retries are :mod:`lossgate.runtime.http_json`'s. Anything else (a
refusal, a truncated answer, JSON that is not the schema, a missing field) raises
:class:`JudgeError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from lossgate.errors import ConfigError, LossgateError
from lossgate.runtime.http_json import RetryPolicy, chat_content, post_json, server_client

__all__ = ["JUDGE_PROMPT_VERSION", "JudgeConfig", "JudgeError", "ModelJudge", "Statement", "STATEMENTS_SCHEMA"]

JUDGE_PROMPT_VERSION = "judge-v2"  # the file prompts/judge-v2.txt; earlier versions stay for audit


class JudgeError(LossgateError):
    """The judge could not read the narrative: the attempt fails, nothing is published."""


class Statement(BaseModel):
    """One statement the narrative makes about the subject, as the judge read it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    fact_id: str | None
    predicate: str | None
    value: str | None
    polarity: Literal["positive", "negative"]
    modality: Literal["asserted", "speculative", "quoted"]
    conditions: tuple[str, ...]
    attributed_to: str | None
    settles_conflict: bool


STATEMENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["statements"],
    "properties": {
        "statements": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": [
                    "fact_id",
                    "predicate",
                    "value",
                    "polarity",
                    "modality",
                    "conditions",
                    "attributed_to",
                    "settles_conflict",
                ],
                "properties": {
                    "fact_id": {"type": ["string", "null"]},
                    "predicate": {"type": ["string", "null"]},
                    "value": {"type": ["string", "null"]},
                    "polarity": {"enum": ["positive", "negative"]},
                    "modality": {"enum": ["asserted", "speculative", "quoted"]},
                    "conditions": {"type": "array", "items": {"type": "string"}},
                    "attributed_to": {"type": ["string", "null"]},
                    "settles_conflict": {"type": "boolean"},
                },
            },
        }
    },
}


class JudgeConfig(BaseModel):
    """Where the judge model is: its own server, model and key, apart from the compressor's."""

    model_config = ConfigDict(frozen=True)

    base_url: str = Field(description="The API root, e.g. http://127.0.0.1:8001/v1")
    model: str = Field(min_length=1)
    api_key: SecretStr | None = None
    timeout_s: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=2, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)
    max_backoff_s: float = Field(default=10.0, ge=0)
    response_format: Literal["json_schema", "json_object"] = "json_schema"

    @classmethod
    def from_env(cls, environ: Mapping[str, str], prefix: str = "LOSSGATE_JUDGE_") -> JudgeConfig | None:
        """From ``environ`` (the CLI and the worker pass ``os.environ``): ``LOSSGATE_JUDGE_URL``
        and ``LOSSGATE_JUDGE_MODEL`` (both, or neither: no judge), ``LOSSGATE_JUDGE_API_KEY``,
        ``LOSSGATE_JUDGE_TIMEOUT``."""
        url, model = environ.get(prefix + "URL"), environ.get(prefix + "MODEL")
        if not url and not model:
            return None
        if not url or not model:
            raise ConfigError(f"a judge needs both {prefix}URL and {prefix}MODEL")
        fields: dict[str, Any] = {"base_url": url, "model": model, "api_key": environ.get(prefix + "API_KEY")}
        if timeout := environ.get(prefix + "TIMEOUT"):
            fields["timeout_s"] = timeout
        try:
            return cls(**fields)
        except ValidationError as exc:
            problem = exc.errors()[0]
            raise ConfigError(f"judge setting {problem['loc'][0]}: {problem['msg']}") from exc


def prompt_text(version: str = JUDGE_PROMPT_VERSION) -> str:
    """The judge's system prompt of ``version``, from the package's prompt files."""
    return (resources.files("lossgate.judge") / "prompts" / f"{version}.txt").read_text(encoding="utf-8")


class ModelJudge:
    """Reads a narrative and lists the statements it makes about the subject's facts."""

    prompt_version = JUDGE_PROMPT_VERSION

    def __init__(self, config: JudgeConfig, *, client: httpx.Client | None = None) -> None:
        self.config = config
        self.name = f"judge:{config.model}"
        self._prompt = prompt_text()
        self._policy = RetryPolicy(config.timeout_s, config.max_retries, config.backoff_s, config.max_backoff_s)
        self._client = client or server_client(config.base_url, config.api_key, config.timeout_s)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ModelJudge | None:
        config = JudgeConfig.from_env(environ)
        return cls(config) if config is not None else None

    def close(self) -> None:
        self._client.close()

    def statements(self, subject_id: str, facts: list[dict[str, Any]], narrative: str) -> list[Statement]:
        document = {"subject": subject_id, "facts": facts, "narrative": narrative}
        payload: dict[str, Any] = {
            "model": self.config.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": self._prompt},
                {"role": "user", "content": json.dumps(document, ensure_ascii=False, default=str)},
            ],
        }
        if self.config.response_format == "json_schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "lossgate_statements", "strict": True, "schema": STATEMENTS_SCHEMA},
            }
        else:
            payload["response_format"] = {"type": "json_object"}
        data = post_json(self._client, "chat/completions", payload, policy=self._policy, error=JudgeError)
        return _parse(data)


def _parse(data: dict[str, Any]) -> list[Statement]:
    content = chat_content(data, error=JudgeError, who="the judge")
    try:
        answer = json.loads(content)
    except json.JSONDecodeError as exc:
        raise JudgeError(f"invalid output: the answer is not JSON ({exc.msg})") from exc
    except RecursionError as exc:
        raise JudgeError("invalid output: the answer nests deeper than any statement list") from exc
    if not isinstance(answer, dict) or not isinstance(answer.get("statements"), list):
        raise JudgeError("invalid output: missing field statements (a list)")
    out = []
    for i, item in enumerate(answer["statements"]):
        try:
            out.append(Statement.model_validate(item))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(x) for x in (i, *problem["loc"]))
            raise JudgeError(f"invalid output: statements.{where}: {problem['msg']}") from exc
    return out
