"""The PostgreSQL store (``postgresql://user@host/db``): :mod:`.store` opens transactions
(pool, roles, error translation, migrations), :mod:`.tx` and :mod:`.derived` hold
PostgreSQL's own primitives beside the shared ones of :mod:`lossgate.store.core`,
``migrations/`` the schema."""

from lossgate.store.postgres.store import APP_ROLE, WORKER_ROLE, PostgresStore, is_transient, retry_transient
from lossgate.store.postgres.tx import PostgresReadTx, PostgresWriteTx

__all__ = [
    "APP_ROLE",
    "WORKER_ROLE",
    "PostgresStore",
    "PostgresReadTx",
    "PostgresWriteTx",
    "is_transient",
    "retry_transient",
]
