"""callreused: an `async def` endpoint that calls another service with one `httpx.AsyncClient`, made at start-up.

Teaches: the fix for `callnew`. One client, made in the app's lifespan and reused by every
request, keeps its connections open in its pool: a call needs no new client and no new
connection, and the endpoint is bounded by its users, users / io, up to the client's 100
connections, while its one event loop keeps up with the calls' CPU.
"""

from fastapi import Depends, Request

from labserver.demo import calls
from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

RESPONSES = calls.RESPONSES
# awaits the other service (the loop serves others), each call on one of the client's connections
TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,), calls=calls.CLIENT_CONNECTIONS)


async def endpoint(request: Request, work: Work = Depends(work_query)) -> dict:
    client = calls.client(request)  # made once, in the lifespan (app.py)
    for _ in range(work.tasks):
        await client.get("/sequential", params={"io_ms": work.io_ms})  # the other service waits io_ms
        fib(work.cpu_n)
    return reply("callreused", work)
