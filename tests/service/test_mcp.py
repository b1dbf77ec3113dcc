"""``lossgate mcp``: the MCP server, reached with the official SDK's own client.

Over stdio, the client spawns ``python -m lossgate mcp`` on a SQLite database this module
prepares (the registry of examples/predicates.toml, keys from ``Admin.create_api_key``):
it remembers, recalls (the text comes back in the rendered block), inspects, forgets
(recall no longer has it); a read-only key cannot write; another tenant's key sees none of
it; a wrong or revoked key stops the command at start (exit 2, one line). One test runs
the streamable HTTP transport, with and without the key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

import lossgate
from lossgate.model.registry import load_registry
from lossgate.testing.service import free_port, stop_process

pytest.importorskip("mcp.server.mcpserver", reason="the [service] extra (mcp 2.x) is not installed")

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.slow  # each test starts MCP servers in processes of their own

ROOT = Path(lossgate.__file__).resolve().parents[1]
REGISTRY = Path(__file__).resolve().parents[2] / "examples" / "predicates.toml"
ENV = {"PYTHONPATH": str(ROOT)}


@dataclass
class Keys:
    db_url: str
    writer: str
    reader: str
    revoked: str
    other_tenant: str
    short_lived: str


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keys]:
    db_url = f"sqlite:///{tmp_path_factory.mktemp('mcp') / 'mcp.db'}"
    memory = lossgate.open(db_url)
    try:
        memory.admin.load_predicates(load_registry(REGISTRY))
        _, writer = memory.admin.create_api_key("travel-co", scopes=["read", "write"], name="agent")
        _, reader = memory.admin.create_api_key("travel-co", scopes=["read"])
        revoked_key, revoked = memory.admin.create_api_key("travel-co", scopes=["read", "write"])
        memory.admin.revoke_api_key("travel-co", revoked_key.key_id)
        _, other = memory.admin.create_api_key("globex", scopes=["read", "write"])
        _, short_lived = memory.admin.create_api_key("travel-co", scopes=["read", "write"])
    finally:
        memory.close()
    yield Keys(
        db_url=db_url, writer=writer, reader=reader, revoked=revoked, other_tenant=other, short_lived=short_lived
    )


def _over_stdio(
    keys: Keys, secret: str, scenario: Callable[[Client], Awaitable[None]], tmp_path: Path, *, key_in_env: bool = False
) -> None:
    args = ["-m", "lossgate", "mcp", "--db", keys.db_url]
    env = dict(ENV)
    if key_in_env:
        env["LOSSGATE_MCP_KEY"] = secret
    else:
        args += ["--key", secret]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(tmp_path))

    async def run() -> None:
        with (tmp_path / "server.log").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=30) as client:
                await scenario(client)

    anyio.run(run)
    assert "Traceback" not in (tmp_path / "server.log").read_text()


async def _ok(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result


async def _error(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The service's error body a failed call carries as its text (and structured)."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    body: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert set(body) == {"code", "message", "details"} and body == result.structured_content
    return body


ALLERGY = {"event_id": "msg-41", "text": "I am allergic to peanuts, not merely avoiding them."}
FACT = {
    "fact_id": "allergy-1",
    "predicate": "food.peanuts_allowed",
    "value": False,
    "qualifiers": {"basis": "allergy", "severity": "critical"},
    "source_event_ids": ["msg-41"],
}
SEAT = {"event_id": "msg-42", "text": "Put me in a window seat on the Lisbon flight."}
TZ_1 = {"event_id": "msg-43", "text": "I live in Lisbon now, so UTC+01:00 in summer."}
TZ_2 = {"event_id": "msg-44", "text": "My calendar is on New York time."}


def test_remember_recall_inspect_forget_over_stdio(keys: Keys, tmp_path: Path) -> None:
    async def scenario(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"remember", "recall", "guard", "forget", "inspect"}
        schema = tools["remember"].input_schema
        assert schema["required"] == ["subject_id"] and schema["properties"]["subject_id"]["maxLength"] == 200
        assert tools["recall"].output_schema is not None and tools["forget"].annotations.destructive_hint

        appended = await _ok(
            client,
            "remember",
            {"subject_id": "user-17", "events": [ALLERGY, SEAT], "facts": [FACT], "idempotency_key": "turn-41"},
        )
        out = appended.structured_content
        assert [e["event_id"] for e in out["appended"]] == ["msg-41", "msg-42"]
        assert out["facts"][0]["fact_id"] == "allergy-1" and out["clock"]["high_water"] == 3
        again = await _ok(
            client,
            "remember",
            {"subject_id": "user-17", "events": [ALLERGY, SEAT], "facts": [FACT], "idempotency_key": "turn-41"},
        )
        assert again.structured_content == out  # the stored answer; nothing written twice
        assert (
            await _error(client, "remember", {"subject_id": "user-17", "events": [SEAT], "idempotency_key": "turn-41"})
        )["code"] == "idempotency_key_reused"

        recalled = await _ok(client, "recall", {"subject_id": "user-17", "query": "window seat"})
        block = recalled.content[0].text
        assert block == recalled.structured_content["rendered"] and block.startswith("Memory of user-17")
        assert "window seat on the Lisbon flight" in block and "food.peanuts_allowed: false" in block

        inspected = (await _ok(client, "inspect", {"subject_id": "user-17"})).structured_content
        assert [(f["fact_id"], f["value"], f["status"]) for f in inspected["facts"]] == [("allergy-1", False, "active")]
        assert inspected["conflicts"] == [] and inspected["clock"] == {"high_water": 3, "input_epoch": 0}
        await _ok(
            client,
            "remember",
            {
                "subject_id": "user-17",
                "events": [TZ_1, TZ_2],
                "facts": [
                    {"fact_id": "tz-1", "predicate": "timezone", "value": "UTC+01:00", "source_event_ids": ["msg-43"]},
                    {"fact_id": "tz-2", "predicate": "timezone", "value": "UTC-05:00", "source_event_ids": ["msg-44"]},
                ],
            },
        )
        inspected = (await _ok(client, "inspect", {"subject_id": "user-17"})).structured_content
        assert [(c["predicate"], sorted(c["fact_ids"])) for c in inspected["conflicts"]] == [
            ("timezone", ["tz-1", "tz-2"])
        ]
        only = await _ok(client, "inspect", {"subject_id": "user-17", "predicate": "timezone"})
        assert {f["fact_id"] for f in only.structured_content["facts"]} == {"tz-1", "tz-2"}

        # the planned order with a peanut dressing is refused, naming the fact; the fixed one is not
        order = {"items": [{"dish": "salad", "ingredients": ["lettuce", "peanut dressing"]}]}
        guarded = await _ok(
            client,
            "guard",
            {"subject_id": "user-17", "action": order, "recall_id": recalled.structured_content["recall_id"]},
        )
        verdict = guarded.structured_content
        assert verdict["allowed"] is False and verdict["refusals"][0]["fact_id"] == "allergy-1"
        assert guarded.content[0].text.startswith("refused") and "food.peanuts_allowed" in guarded.content[0].text
        order["items"][0]["ingredients"] = ["lettuce", "lemon"]
        assert (
            (await _ok(client, "guard", {"subject_id": "user-17", "action": order}))
            .content[0]
            .text.startswith("allowed")
        )
        assert (await _error(client, "guard", {"subject_id": "user-17", "action": order, "recall_id": "rc-nothing"}))[
            "code"
        ] == "not_found"

        forgotten = (
            await _ok(
                client, "forget", {"subject_id": "user-17", "kind": "event", "id": "msg-42", "reason": "user asked"}
            )
        ).structured_content
        assert forgotten["forgotten"] == "event" and forgotten["event"]["state"] == "deleted"
        assert forgotten["event"]["text"] is None
        block = (await _ok(client, "recall", {"subject_id": "user-17", "query": "window seat"})).content[0].text
        assert "Lisbon" not in block and "peanuts" in block
        fact = await _ok(client, "forget", {"subject_id": "user-17", "kind": "fact", "id": "allergy-1"})
        assert fact.structured_content["fact"]["status"] == "deleted"
        facts = (await _ok(client, "inspect", {"subject_id": "user-17"})).structured_content["facts"]
        assert "allergy-1" not in {f["fact_id"] for f in facts}
        block = (await _ok(client, "recall", {"subject_id": "user-17"})).content[0].text
        assert "food.peanuts_allowed" not in block

        # Errors: the service's stable codes, never a traceback.
        missing = await _error(client, "forget", {"subject_id": "user-17", "kind": "fact", "id": "allergy-9"})
        assert missing["code"] == "not_found" and "allergy-9" in missing["message"]
        invalid = await _error(client, "remember", {"subject_id": "user 17", "events": [{"txt": "typo"}]})
        assert invalid["code"] == "validation_error"
        assert {d["loc"] for d in invalid["details"]} == {"subject_id", "events.0.txt"}
        high_water = (await _ok(client, "inspect", {"subject_id": "user-17"})).structured_content["clock"]["high_water"]
        unknown = await _error(
            client,
            "remember",
            {
                "subject_id": "user-17",
                "events": [{"event_id": "e9"}],
                "facts": [{"predicate": "no.such", "value": 1, "source_event_ids": ["e9"]}],
            },
        )
        assert unknown["code"] == "unknown_predicate"
        after = (await _ok(client, "inspect", {"subject_id": "user-17"})).structured_content["clock"]["high_water"]
        assert after == high_water  # the refused call wrote nothing, not even its event
        tenant = await _error(client, "remember", {"subject_id": "u", "events": [], "tenant_id": "globex"})
        assert tenant["code"] == "validation_error"  # no tool takes a tenant

    _over_stdio(keys, keys.writer, scenario, tmp_path)


def test_scopes_and_tenants_over_stdio(keys: Keys, tmp_path: Path) -> None:
    async def seed(client: Client) -> None:
        await _ok(client, "remember", {"subject_id": "user-9", "events": [{"event_id": "e1", "text": "likes tea"}]})
        memory = lossgate.open(keys.db_url, migrate=False)
        try:
            memory.admin.revoke_api_key("travel-co", keys.short_lived.split("_")[1])
        finally:
            memory.close()
        refused = await _error(client, "recall", {"subject_id": "user-9"})  # revoked while the server runs
        assert refused["code"] == "unauthorized"

    async def read_only(client: Client) -> None:
        assert "likes tea" in (await _ok(client, "recall", {"subject_id": "user-9"})).content[0].text
        for tool, args in (
            ("remember", {"subject_id": "user-9", "events": [{"text": "likes coffee"}]}),
            ("forget", {"subject_id": "user-9", "kind": "event", "id": "e1"}),
        ):
            refused = await _error(client, tool, args)
            assert refused["code"] == "forbidden" and "'write' scope" in refused["message"]

    async def other_tenant(client: Client) -> None:
        assert "likes tea" not in (await _ok(client, "recall", {"subject_id": "user-9"})).content[0].text
        assert (await _ok(client, "inspect", {"subject_id": "user-9"})).structured_content["clock"]["high_water"] == 0
        gone = await _error(client, "forget", {"subject_id": "user-9", "kind": "event", "id": "e1"})
        assert gone["code"] == "not_found"  # another tenant's event reads as a missing one

    _over_stdio(keys, keys.short_lived, seed, tmp_path)
    _over_stdio(keys, keys.reader, read_only, tmp_path)
    _over_stdio(keys, keys.other_tenant, other_tenant, tmp_path, key_in_env=True)


@pytest.mark.parametrize("which", ["wrong", "revoked", "missing"])
def test_a_bad_key_stops_the_server_at_start(keys: Keys, which: str) -> None:
    secret = {"wrong": "lg_0123456789ab_" + "x" * 43, "revoked": keys.revoked, "missing": ""}[which]
    proc = subprocess.run(
        [sys.executable, "-m", "lossgate", "mcp", "--db", keys.db_url, "--key", secret],
        env={**os.environ, **ENV, "LOSSGATE_MCP_KEY": ""},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("error: ")
    assert ("API key is required" if which == "missing" else "invalid or revoked") in proc.stderr


def test_streamable_http_needs_the_key(keys: Keys) -> None:
    import httpx2

    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lossgate",
            "mcp",
            "--db",
            keys.db_url,
            "--transport",
            "http",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env={**os.environ, **ENV, "LOSSGATE_MCP_KEY": keys.writer},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                refused = httpx2.post(url, json={}, timeout=1)
                break
            except httpx2.TransportError:
                assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else "mcp exited"
                assert time.monotonic() < deadline, "lossgate mcp --transport http did not come up"
                time.sleep(0.1)
        assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
        wrong = httpx2.post(url, json={}, headers={"Authorization": f"Bearer {keys.reader}"}, timeout=5)
        assert wrong.status_code == 401  # another key of the tenant is not the server's key

        async def scenario() -> None:
            from mcp.client.streamable_http import streamable_http_client

            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {keys.writer}"}, timeout=30) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    await _ok(client, "remember", {"subject_id": "user-http", "events": [{"text": "over HTTP"}]})
                    block = (await _ok(client, "recall", {"subject_id": "user-http"})).content[0].text
                    assert "over HTTP" in block

        anyio.run(scenario)
    finally:
        stop_process(proc, grace=15)


# -- the id rule and the JSON rule reach the tools too ---------------------------------------


def test_a_bad_id_is_refused_by_every_tool_and_writes_nothing(keys: Keys, tmp_path: Path) -> None:
    async def scenario(client: Client) -> None:
        await _ok(client, "remember", {"subject_id": "user-ids", "events": [{"event_id": "ids-1", "text": "hello"}]})
        before = (await _ok(client, "inspect", {"subject_id": "user-ids"})).structured_content
        for arguments in (
            {"subject_id": "user\u200bids", "events": [{"event_id": "ids-2"}]},
            {"subject_id": "user-ids", "events": [{"event_id": "ids-2\u202e"}]},
            {
                "subject_id": "user-ids",
                "events": [{"event_id": "ids-2"}],
                "facts": [
                    {"fact_id": "f\ufeff1", "predicate": "timezone", "value": "UTC", "source_event_ids": ["ids-2"]}
                ],
            },
        ):
            refused = await _error(client, "remember", arguments)
            assert refused["code"] == "validation_error", refused
            shown = refused["message"] + json.dumps(refused["details"], ensure_ascii=False)
            assert not {"\u200b", "\u202e", "\ufeff"} & set(shown)
        for tool, arguments in (
            ("recall", {"subject_id": "user\nids"}),
            ("inspect", {"subject_id": "user\u2028ids"}),
            ("forget", {"subject_id": "user\u00a0ids", "kind": "event", "id": "ids-1"}),
        ):
            assert (await _error(client, tool, arguments))["code"] == "validation_error", tool
        gone = await _error(client, "forget", {"subject_id": "user-ids", "kind": "event", "id": "ids-1\u202e"})
        assert gone["code"] == "not_found" and "\u202e" not in gone["message"]  # looked up as given, shown escaped
        assert (await _ok(client, "inspect", {"subject_id": "user-ids"})).structured_content == before

    _over_stdio(keys, keys.writer, scenario, tmp_path)


def _call(request_id: int, arguments: str) -> str:
    """A raw ``tools/call`` of ``remember`` whose arguments are the JSON text ``arguments``."""
    return (
        '{"jsonrpc": "2.0", "id": ' + str(request_id) + ', "method": "tools/call", '
        '"params": {"name": "remember", "arguments": ' + arguments + "}}"
    )


UNREADABLE_CALLS = {
    "duplicate subject": (
        '{"subject_id": "user-raw", "subject_id": "user-other", "events": []}',
        "(arguments)",
        "duplicate_key",
    ),
    "duplicate in an event": (
        '{"subject_id": "user-raw", "events": [{"event_id": "e1", "event_id": "e2"}]}',
        "events.0",
        "duplicate_key",
    ),
    "1e-400 in a payload": (
        '{"subject_id": "user-raw", "events": [{"event_id": "e1", "payload": {"x": 1e-400}}]}',
        "events.0.payload.x",
        "number_out_of_range",
    ),
    "1e999 in a payload": (
        '{"subject_id": "user-raw", "events": [{"event_id": "e1", "payload": {"x": 1e999}}]}',
        "events.0.payload.x",
        "number_out_of_range",
    ),
}


def _refused_call(reply: dict[str, Any], request_id: int, loc: str, kind: str) -> None:
    assert reply["id"] == request_id and reply["result"]["isError"] is True, reply
    body = reply["result"]["structuredContent"]
    assert body["code"] == "malformed_json" and [(d["loc"], d["type"]) for d in body["details"]] == [(loc, kind)]
    assert json.loads(reply["result"]["content"][0]["text"]) == body


def test_a_message_that_would_not_read_back_as_written_is_refused_over_stdio(keys: Keys) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lossgate", "mcp", "--db", keys.db_url, "--key", keys.writer],
        env={**os.environ, **ENV},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for number, (arguments, loc, kind) in enumerate(UNREADABLE_CALLS.values(), start=1):
            proc.stdin.write(_call(number, arguments) + "\n")
            proc.stdin.flush()
            _refused_call(json.loads(proc.stdout.readline()), number, loc, kind)
        proc.stdin.write('{"jsonrpc": "2.0", "id": 99, "method": "ping", "params": {"a": 1, "a": 2}}\n')
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 99 and reply["error"]["data"]["code"] == "malformed_json", reply
    finally:
        proc.stdin.close()
        stop_process(proc, grace=15)
    memory = lossgate.open(keys.db_url, migrate=False)
    try:
        assert "user-raw" not in memory.admin.subjects("travel-co") and "user-other" not in memory.admin.subjects(
            "travel-co"
        )
    finally:
        memory.close()


def test_a_message_that_would_not_read_back_as_written_is_refused_over_http(keys: Keys) -> None:
    import httpx

    from lossgate.service.mcp import create_server, http_app
    from lossgate.testing.service import serving

    memory = lossgate.open(keys.db_url, migrate=False)
    try:
        app = http_app(create_server(memory, keys.writer), keys.writer)
        with serving(app) as url, httpx.Client(base_url=url, timeout=30) as http:
            sent = {
                "Authorization": f"Bearer {keys.writer}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            }
            for number, (arguments, loc, kind) in enumerate(UNREADABLE_CALLS.values(), start=1):
                answer = http.post("/mcp", content=_call(number, arguments).encode(), headers=sent)
                assert answer.status_code == 200, answer.text
                _refused_call(answer.json(), number, loc, kind)
            for headers in (
                {**sent, "Authorization": f"Bearer  {keys.writer}"},
                {**sent, "Authorization": f"bearer {keys.writer}"},
            ):
                refused = http.post("/mcp", content=_call(9, "{}").encode(), headers=headers)
                assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
        assert "user-raw" not in memory.admin.subjects("travel-co")
    finally:
        memory.close()
