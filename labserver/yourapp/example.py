"""The shipped example of an app of one's own: three routes, each bound by something else.

    python -m labserver measure labserver.yourapp.example:app "GET /items" "GET /report" "GET /digest"

- `GET /items` awaits a 50 ms call (an async database driver, say): the users bind it.
- `GET /report` is a `def` endpoint that blocks 50 ms (a synchronous driver): it holds one of the
  thread pool's 40 threads while it runs, so the threads bind it, at about 40 / 0.05 s.
- `GET /digest` hashes for about 5 ms of CPU on the event loop: the loop's one core binds it.
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


@app.get("/items")
async def items(limit: int = 20) -> list[dict]:
    await asyncio.sleep(WAIT_S)
    return [{"id": i} for i in range(limit)]


@app.get("/report")
def report() -> dict:
    time.sleep(WAIT_S)
    return {"rows": 3}


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
