"""The shipped example of an app of one's own: routes written as real apps write them, each bound by something else.

    python -m labserver measure labserver.yourapp.example:app "GET /items" "GET /report" "GET /legacy"

- `GET /items` awaits a 50 ms call (an async database driver, say): the users bind it.
- `GET /report` is a `def` endpoint that blocks 50 ms (a synchronous driver): it holds one of the
  thread pool's 40 threads while it runs, so the threads bind it, at about 40 / 0.05 s.
- `GET /legacy` calls the same blocking function inside `async def`: it holds the event loop for its
  50 ms, and no other request on that worker moves meanwhile; the loop binds it, at 1 / 0.05 s.
- `GET /digest` hashes for about 5 ms of CPU on the event loop: the loop's one core binds it.
- `GET /catalog` returns 3,000 pydantic items: FastAPI validates and serialises them on the event
  loop, about a millisecond of CPU, and the loop's core binds it.
- `POST /orders` takes a JSON body, as `"POST /orders @order.json"` sends notebooks/order.json from
  the notebooks folder, and awaits a 20 ms call.
"""

from __future__ import annotations

import asyncio
import hashlib
import time

from fastapi import FastAPI
from pydantic import BaseModel

app = FastAPI(title="An app of one's own")
WAIT_S = 0.05
ROUNDS = 20_000  # hashes of a small digest, one after another: a few ms of Python's loop around C


class Order(BaseModel):
    item: str
    quantity: int = 1


class Product(BaseModel):
    id: int
    name: str
    tags: list[str]
    price: float


CATALOG = [Product(id=i, name=f"product {i}", tags=["tea", f"batch-{i % 7}"], price=i / 10) for i in range(3000)]


@app.get("/items")
async def items(limit: int = 20) -> list[dict]:
    await asyncio.sleep(WAIT_S)
    return [{"id": i} for i in range(limit)]


@app.get("/report")
def report() -> dict:
    time.sleep(WAIT_S)
    return {"rows": 3}


@app.get("/legacy")
async def legacy() -> dict:
    time.sleep(WAIT_S)  # a synchronous driver's call, inside async def
    return {"rows": 3}


@app.get("/catalog")
async def catalog() -> list[Product]:
    return CATALOG


@app.get("/digest")
async def digest() -> dict:
    value = b"order"
    for _ in range(ROUNDS):
        value = hashlib.sha256(value).digest()
    return {"digest": value.hex()}


@app.post("/orders", status_code=201)
async def orders(order: Order) -> dict:
    await asyncio.sleep(0.02)
    return {"item": order.item, "quantity": order.quantity}
