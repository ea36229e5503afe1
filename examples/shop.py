"""A small shop's API, the lab's example of an app of one's own: seven routes of six kinds, bound by four things.

    python -m labserver measure examples.shop:app "GET /items" "GET /report" "GET /me" --users 64

Its two outside services are stood in for by waits, so that it needs nothing else running: an
async one (`inventory`, 50 ms a call, awaited) and a synchronous one (`ledger`, 50 ms a call, which
blocks the thread that calls it). Its database is SQLite, from Python's standard library.

- `GET /items` awaits the async service in `async def`: nothing is held while it waits, so the
  users bind it.
- `GET /report` calls the synchronous service from a plain `def`: FastAPI runs it in its thread
  pool, each request holds one of the 40 threads for 50 ms, and the threads bind it.
- `GET /me` is an `async def`, but its `current_user` dependency is a plain `def` that calls the
  synchronous service: FastAPI runs that dependency in the thread pool, and the threads bind it.
- `GET /legacy` calls the synchronous service inside `async def`: it holds the event loop for its
  50 ms, and no other request on that worker moves meanwhile; the loop binds it.
- `GET /catalog` returns 20,000 pydantic items: FastAPI checks and serialises them on the event
  loop, more than 10 ms of CPU, and the worker's core binds it.
- `GET /orders` (`?customer=7`) is a `def` that reads a customer's 1,000 orders from SQLite through a
  pool of 2 connections: a fraction of a ms in SQLite, the rest Python building and serialising
  the rows; the worker's core binds it. Past a handful of users its CPU per request grows, as the
  threads waiting for a connection are woken and pass the GIL (lesson 15, exercise 4).
- `POST /orders` takes a JSON body (`"POST /orders @examples/order.json"`) and awaits the async
  service.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import queue
import random
import sqlite3
import time
from collections.abc import Iterator

from fastapi import Depends, FastAPI
from pydantic import BaseModel

SERVICE_S = 0.05  # one call to either outside service
CUSTOMERS = 100
ORDERS = 100_000
CONNECTIONS = 2  # the database pool's connections: a request waits for one, without the GIL, while both are in use


class Product(BaseModel):
    id: int
    name: str
    tags: list[str]
    price: float


class OrderRow(BaseModel):
    id: int
    status: str
    total: float


class Order(BaseModel):
    item: str
    quantity: int = 1


CATALOG = [Product(id=i, name=f"product {i}", tags=["tea", f"batch-{i % 7}"], price=i / 10) for i in range(20_000)]
gc.freeze()  # the catalog lives as long as the app: out of the collector's way, else each full collection walks it


async def inventory(limit: int) -> list[dict]:
    """The async service: awaited, it holds nothing while it answers."""
    await asyncio.sleep(SERVICE_S)
    return [{"id": i, "in_stock": i % 3 != 0} for i in range(limit)]


def ledger(what: str) -> dict:
    """The synchronous service: it blocks the thread that calls it until it answers."""
    time.sleep(SERVICE_S)
    return {"what": what, "rows": 3}


class Pool:
    """A fixed set of SQLite connections to one in-memory database, shared by the worker's threads."""

    def __init__(self, size: int):
        # one database per worker process, in memory, seen by all its connections (SQLite's shared cache)
        uri = f"file:shop-{os.getpid()}?mode=memory&cache=shared"
        self.idle: queue.Queue[sqlite3.Connection] = queue.Queue()
        for _ in range(size):
            self.idle.put(sqlite3.connect(uri, uri=True, check_same_thread=False))
        self.keep = sqlite3.connect(uri, uri=True)  # the database lives while one connection is open
        _fill(self.keep)

    @contextlib.contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        db = self.idle.get(timeout=5)
        try:
            yield db
        finally:
            self.idle.put(db)


def _fill(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER, status TEXT, total REAL)")
    rng = random.Random(1)
    rows = [(c % CUSTOMERS, rng.choice(["paid", "sent", "open"]), rng.uniform(5, 80)) for c in range(ORDERS)]
    db.executemany("INSERT INTO orders (customer, status, total) VALUES (?, ?, ?)", rows)
    db.execute("CREATE INDEX orders_customer ON orders (customer)")
    db.commit()


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI):
    app.state.db = Pool(CONNECTIONS)
    yield


app = FastAPI(title="A small shop", lifespan=lifespan)


def current_user() -> dict:
    return ledger("session")  # a plain def: FastAPI runs it in its thread pool


@app.get("/items")
async def items(limit: int = 20) -> list[dict]:
    return await inventory(limit)


@app.get("/report")
def report() -> dict:
    return ledger("report")


@app.get("/me")
async def me(user: dict = Depends(current_user)) -> dict:
    return {"user": user["what"], "rows": user["rows"]}


@app.get("/legacy")
async def legacy() -> dict:
    return ledger("legacy")  # the synchronous service, called inside async def


@app.get("/catalog")
async def catalog() -> list[Product]:
    return CATALOG


@app.get("/orders")
def customer_orders(customer: int = 7) -> list[OrderRow]:
    with app.state.db.connection() as db:
        # one row, the orders as a JSON array built by SQLite: Python's sqlite3 lets go of the GIL for each row it
        # steps through, and a thousand rows would each wait for it again behind the other threads
        [(found,)] = db.execute(
            "SELECT json_group_array(json_array(id, status, total)) FROM "
            "(SELECT id, status, total FROM orders WHERE customer = ? ORDER BY id)",
            (customer % CUSTOMERS,),
        ).fetchall()
    return [OrderRow(id=i, status=status, total=total) for i, status, total in json.loads(found)]


@app.post("/orders", status_code=201)
async def place_order(order: Order) -> dict:
    await inventory(0)
    return {"item": order.item, "quantity": order.quantity}
