"""callnew: an `async def` endpoint that calls another service with a new `httpx.AsyncClient` each request.

Teaches: a client is expensive to make. httpx loads its certificates and builds an SSL context
in every new client, even for a plain http:// call, and opens a new connection: CPU on the
event loop for each request, which bounds the worker at 1 / (that CPU) requests a second.
"""

import httpx
from fastapi import Depends, Request

from labserver.demo import calls
from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

RESPONSES = calls.RESPONSES
# awaits the other service; a new client's CPU on the loop, before the call: its users come back in step
TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,), loop_in_step=True)


async def endpoint(request: Request, work: Work = Depends(work_query)) -> dict:
    async with httpx.AsyncClient(base_url=calls.upstream(request)) as client:  # a new client, and a new connection
        for _ in range(work.tasks):
            await client.get("/sequential", params={"io_ms": work.io_ms})  # the other service waits io_ms
            fib(work.cpu_n)
    return reply("callnew", work)
