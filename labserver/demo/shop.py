"""The database endpoints of Carlos Pena's k6 load test: the same queries through a sync and an async psycopg pool.

- `/sync_select` (`def`, `ConnectionPool`) and `/async_select` (`async def`, `AsyncConnectionPool`):
  one SELECT of a user's orders.
- `/sync_simulation` and `/async_simulation`: the article's "production-like" request, two
  queries run at once (a two-thread executor in the sync version, `asyncio.gather` in the
  async one) and then fib(cpu_n) of CPU post-processing.

They take the patterns' query parameters (`io_ms` becomes a wait *inside* the database,
`pg_sleep`, which holds the connection but no CPU, like a slow query or a distant server)
plus `user_id`. The router is included only when the server has a database URL (settings.py);
its lifespan opens both pools at their full size before the first request and closes them.

Every use of a pooled connection is timed, from the moment the pool lends it to the moment it has it
back (`lent`), into the app's HoldMeter (`app.state.db_held`): under load a request holds its
connection longer than alone, and the model prices the connection pool with what this measures.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from psycopg import AsyncConnection, Connection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from labserver.demo.params import Digits, work_query
from labserver.demo.telemetry import HoldMeter
from labserver.demo.work import Work, fib

# The single SELECT: a user's orders (index on orders.user_id).
USER_ORDERS = "SELECT id, status, created_at FROM orders WHERE user_id = %(user_id)s ORDER BY id"
# The simulation's two queries: what the user bought, per product, and every item of every order.
USER_PRODUCTS = """
    SELECT p.id AS product_id, p.title, sum(i.quantity)::int AS quantity
    FROM orders o JOIN order_items i ON i.order_id = o.id JOIN products p ON p.id = i.product_id
    WHERE o.user_id = %(user_id)s GROUP BY p.id, p.title ORDER BY p.id"""
USER_ITEMS = """
    SELECT o.id AS order_id, o.status, i.product_id, i.quantity
    FROM orders o JOIN order_items i ON i.order_id = o.id
    WHERE o.user_id = %(user_id)s ORDER BY o.id, i.id"""
WAIT = "SELECT pg_sleep(%(wait_s)s)"


@asynccontextmanager
async def lifespan(app: FastAPI):
    settings = app.state.settings
    size = settings.db_pool
    # Full size from the start (min = max): a pool still growing would make the first seconds
    # of a run measure connection set-up instead of the endpoint.
    sync_pool = ConnectionPool(
        settings.database_url, min_size=size, max_size=size, open=False, name="sync", configure=_warm
    )
    async_pool = AsyncConnectionPool(
        settings.database_url, min_size=size, max_size=size, open=False, name="async", configure=_awarm
    )
    app.state.sync_pool, app.state.async_pool = sync_pool, async_pool
    try:
        # well within LabServer's start-up wait, so that its error shows the pool's
        sync_pool.open(wait=True, timeout=20)
        await async_pool.open(wait=True, timeout=20)
        yield
    finally:
        await async_pool.close()
        sync_pool.close()


router = APIRouter(lifespan=lifespan)
# The four endpoints serialise their rows alike, with jsonable_encoder on the event loop
# (response_model=None), as the article's unannotated endpoints did: with the model FastAPI infers
# from `-> dict`, a `def` endpoint's reply would be validated in a second trip through the
# thread pool, and the comparison would measure serialisation as well as the driver.
WARM_UP = (WAIT, USER_ORDERS, USER_PRODUCTS, USER_ITEMS)


# Each new connection runs every query once before the pool lends it out: a fresh PostgreSQL
# backend loads its catalog caches on first use, which would otherwise land in the measurement.
def _warm(conn) -> None:
    for sql in WARM_UP:
        conn.execute(sql, {"user_id": 1, "wait_s": 0})
    conn.commit()


async def _awarm(conn) -> None:
    for sql in WARM_UP:
        await conn.execute(sql, {"user_id": 1, "wait_s": 0})
    await conn.commit()


async def db_work(
    work: Annotated[Work, Depends(work_query)],
    user_id: Annotated[int, Query(ge=1, le=2**62, description="whose orders to read"), Digits] = 1,
) -> tuple[Work, int]:
    if work.tasks != 1:
        raise HTTPException(
            422,
            [
                {
                    "loc": ["query", "tasks"],
                    "msg": f"the database endpoints do one request's work: tasks must be 1, got {work.tasks}",
                    "type": "value_error",
                }
            ],
        )
    return work, user_id


# From when the pool lends the connection to when it has it back: the queries, the COMMIT on the way
# out, the return, and every wait for the worker's GIL or event loop in between. Not the wait for
# a free connection: that is the queue in front of the pool, not a use of it.
@contextmanager
def lent(pool: ConnectionPool, held: HoldMeter) -> Iterator[Connection]:
    start = None
    try:
        with pool.connection() as conn:
            start = time.perf_counter()
            yield conn
    finally:
        if start is not None:  # a connection that was never lent was not held
            held.add(time.perf_counter() - start)


@asynccontextmanager
async def alent(pool: AsyncConnectionPool, held: HoldMeter) -> AsyncIterator[AsyncConnection]:
    start = None
    try:
        async with pool.connection() as conn:
            start = time.perf_counter()
            yield conn
    finally:
        if start is not None:
            held.add(time.perf_counter() - start)


def _fetch(pool: ConnectionPool, held: HoldMeter, sql: str, user_id: int, io_ms: int) -> list[dict]:
    with lent(pool, held) as conn, conn.cursor(row_factory=dict_row) as cur:
        if io_ms:
            cur.execute(WAIT, {"wait_s": io_ms / 1000})  # holds the connection, not the CPU
        cur.execute(sql, {"user_id": user_id})
        return cur.fetchall()


async def _afetch(pool: AsyncConnectionPool, held: HoldMeter, sql: str, user_id: int, io_ms: int) -> list[dict]:
    async with alent(pool, held) as conn, conn.cursor(row_factory=dict_row) as cur:
        if io_ms:
            await cur.execute(WAIT, {"wait_s": io_ms / 1000})
        await cur.execute(sql, {"user_id": user_id})
        return await cur.fetchall()


@router.get("/sync_select", response_model=None, summary="def + ConnectionPool: one SELECT")
def sync_select(request: Request, q: Annotated[tuple[Work, int], Depends(db_work)]) -> dict:
    (work, user_id), state = q, request.app.state
    return {"rows": _fetch(state.sync_pool, state.db_held, USER_ORDERS, user_id, work.io_ms), "pid": os.getpid()}


@router.get("/async_select", response_model=None, summary="async def + AsyncConnectionPool: one SELECT")
async def async_select(request: Request, q: Annotated[tuple[Work, int], Depends(db_work)]) -> dict:
    (work, user_id), state = q, request.app.state
    rows = await _afetch(state.async_pool, state.db_held, USER_ORDERS, user_id, work.io_ms)
    return {"rows": rows, "pid": os.getpid()}


def _simulation_reply(products: list[dict], items: list[dict], cpu_n: int) -> dict:
    total = sum(row["quantity"] for row in items)
    return {
        "total_quantity": total,
        "fib": fib(cpu_n),
        "cpu_n": cpu_n,
        "products": products,
        "items": items,
        "pid": os.getpid(),
    }


@router.get("/sync_simulation", response_model=None, summary="def: two queries on two threads, then fib(cpu_n)")
def sync_simulation(request: Request, q: Annotated[tuple[Work, int], Depends(db_work)]) -> dict:
    (work, user_id), state = q, request.app.state
    pool, held = state.sync_pool, state.db_held
    # As in the article: a fresh two-thread executor per request, one connection per query.
    with ThreadPoolExecutor(max_workers=2) as executor:
        products = executor.submit(_fetch, pool, held, USER_PRODUCTS, user_id, work.io_ms)
        items = executor.submit(_fetch, pool, held, USER_ITEMS, user_id, work.io_ms)
        return _simulation_reply(products.result(), items.result(), work.cpu_n)


@router.get("/async_simulation", response_model=None, summary="async def: two queries gathered, then fib(cpu_n)")
async def async_simulation(request: Request, q: Annotated[tuple[Work, int], Depends(db_work)]) -> dict:
    (work, user_id), state = q, request.app.state
    pool, held = state.async_pool, state.db_held
    products, items = await asyncio.gather(
        _afetch(pool, held, USER_PRODUCTS, user_id, work.io_ms), _afetch(pool, held, USER_ITEMS, user_id, work.io_ms)
    )
    return _simulation_reply(products, items, work.cpu_n)  # fib runs on the event loop, as in the article


@router.get("/db_info", summary="the database pools' state, and how long their connections were held")
async def db_info(request: Request) -> dict:
    state = request.app.state
    held_s, uses = state.db_held.totals()
    return {
        "db_pool": state.settings.db_pool,
        "sync": state.sync_pool.get_stats(),
        "async": state.async_pool.get_stats(),
        "held": {"held_s": held_s, "uses": uses},  # both pools', since this worker started
    }
