"""Synchronous PostgreSQL engines (pg8000) for the stores read on the event loop or between requests: the accounts
(users/records.py) and the KB catalogue (kb/catalogue.py).

    engine = postgres_engine("postgresql+pg8000://user@host/db", "clincite-kb")

pg8000 waits on its socket forever by default: a PostgreSQL that accepts a connection and then says nothing (a
network partition, a server stalled mid-shutdown) held the worker's event loop — the accounts are read there on every
request — until the clinicians' sockets timed out. Every read and write now gives up after SOCKET_TIMEOUT seconds,
which the stores treat as the outage it is.
"""

from __future__ import annotations

from sqlalchemy import Engine, create_engine

SOCKET_TIMEOUT = 5.0  # seconds a connect, a read or a write may wait on PostgreSQL's socket


def postgres_engine(url: str, application_name: str) -> Engine:
    """A pooled pg8000 engine whose connections are checked before use and never wait longer than SOCKET_TIMEOUT."""
    return create_engine(
        url,
        pool_pre_ping=True,
        connect_args={"application_name": application_name, "timeout": SOCKET_TIMEOUT},
    )
