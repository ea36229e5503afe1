"""A pool of stand-in connections, `db_pool` per worker: what a sync database session borrows (lesson 11).

What matters here is only that there are `db_pool` of them: a request that wants one while all
are lent blocks its thread until one comes back, or fails after POOL_TIMEOUT_S, as SQLAlchemy's
pool does after its `pool_timeout`.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from contextlib import contextmanager

POOL_TIMEOUT_S = 30  # SQLAlchemy's default pool_timeout


def pool(size: int) -> queue.Queue:
    connections: queue.Queue = queue.Queue(size)
    for n in range(size):
        connections.put(n)
    return connections


@contextmanager
def borrowed(connections: queue.Queue) -> Iterator[int]:
    """One connection of `connections`, given back on leaving: blocks this thread until one is free."""
    connection = connections.get(timeout=POOL_TIMEOUT_S)
    try:
        yield connection
    finally:
        connections.put(connection)
