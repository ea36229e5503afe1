"""fanout: an `async def` endpoint that makes its `tasks` calls to another service at once, with `asyncio.gather`.

Teaches: calls made together take as long as the slowest of them, io_ms, where `callreused`'s,
one after another, take tasks × io_ms. But nothing bounds them: each request holds `tasks` of the
client's connections at once, and the other service gets users × tasks calls at once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from fastapi import Depends, Request

from labserver.demo import calls
from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

if TYPE_CHECKING:  # the client is the app's (calls.py)
    import httpx

RESPONSES = calls.RESPONSES
# the calls overlap, each on one of the client's connections
TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,), overlaps=True, calls=calls.CLIENT_CONNECTIONS)


async def call(client: httpx.AsyncClient, work: Work) -> int:
    await client.get("/sequential", params={"io_ms": work.io_ms})  # the other service waits io_ms
    return fib(work.cpu_n)


async def endpoint(request: Request, work: Work = Depends(work_query)) -> dict:
    client = calls.client(request)  # made once, in the lifespan (app.py)
    await asyncio.gather(*(call(client, work) for _ in range(work.tasks)))
    return reply("fanout", work)
