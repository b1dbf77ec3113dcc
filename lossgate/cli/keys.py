"""API key commands: ``lossgate keys create|list|revoke``.

A key is bound to one tenant and a set of scopes (``read``, ``write``, ``admin``) and lets
a client reach that tenant's memory through ``lossgate serve``. The store keeps the sha256
of its secret; ``create`` prints the secret once.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from lossgate.cli.app import err, open_memory, out
from lossgate.cli.display import print_table
from lossgate.cli.ledger import AsJson, Tenant
from lossgate.model.api_keys import ApiKey

__all__ = ["register"]

keys_app = typer.Typer(
    help="API keys of the memory service (lossgate serve): one tenant and scopes each.", no_args_is_help=True
)


def _json(key: ApiKey, secret: str | None = None) -> str:
    doc = {
        "tenant_id": key.tenant_id,
        "key_id": key.key_id,
        "scopes": list(key.scopes),
        "name": key.name,
        "created_at": key.created_at.isoformat(),
        "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
    }
    if secret is not None:
        doc["secret"] = secret
    return json.dumps(doc)


@keys_app.command("create")
def create(
    ctx: typer.Context,
    tenant: Tenant,
    scopes: Annotated[
        str, typer.Option("--scopes", help="Comma-separated: read, write, admin (each stands alone).")
    ] = "read,write",
    name: Annotated[str, typer.Option("--name", help="A name for people (who holds the key).")] = "",
    as_json: AsJson = False,
) -> None:
    """Create a key for the tenant and print its secret, once: only its hash is stored."""
    with open_memory(ctx, create=True) as memory:
        key, secret = memory.admin.create_api_key(tenant, scopes=[scopes], name=name)
    if as_json:
        typer.echo(_json(key, secret))
        return
    typer.echo(secret)
    err().print(
        Text.assemble(
            "key ",
            (key.key_id, "cyan"),
            f" for tenant {key.tenant_id} ({', '.join(key.scopes)}); the secret above is not shown again",
        )
    )


@keys_app.command("list")
def list_keys(ctx: typer.Context, tenant: Tenant, as_json: AsJson = False) -> None:
    """The tenant's keys, revoked ones included (never their secrets)."""
    with open_memory(ctx) as memory:
        keys = memory.admin.api_keys(tenant)
    if as_json:
        for key in keys:
            typer.echo(_json(key))
        return
    table = Table(title=f"API keys of {tenant}", title_justify="left")
    for col in ("key", "scopes", "name", "created", "revoked"):
        table.add_column(col, overflow="fold")
    for key in keys:
        table.add_row(
            Text(key.key_id, style="cyan"),
            ", ".join(key.scopes),
            Text(key.name),
            key.created_at.isoformat(timespec="seconds"),
            key.revoked_at.isoformat(timespec="seconds") if key.revoked_at else "-",
        )
    print_table(out(), table, empty=f"no API keys for tenant {tenant}")


@keys_app.command("revoke")
def revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id (`keys list`).")],
    tenant: Tenant,
    as_json: AsJson = False,
) -> None:
    """Revoke one of the tenant's keys: the next request with it is refused (401)."""
    with open_memory(ctx) as memory:
        key = memory.admin.revoke_api_key(tenant, key_id)
    if as_json:
        typer.echo(_json(key))
        return
    out().print(Text.assemble("key ", (key.key_id, "cyan"), f" of tenant {key.tenant_id} revoked"))


def register(app: typer.Typer) -> None:
    """Add the ``keys`` command group to ``app``."""
    app.add_typer(keys_app, name="keys")
