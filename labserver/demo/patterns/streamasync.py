"""streamasync: a `StreamingResponse` over an async generator that awaits before each chunk.

Teaches: an async generator is iterated on the event loop: its waits hold nothing, so open
streams are bounded by their users alone, however many there are.
"""

import asyncio
import json
from collections.abc import AsyncIterator

from fastapi import Depends
from fastapi.responses import StreamingResponse

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

# a JSON reply per chunk, a line each
RESPONSES = {
    200: {"description": "a line per chunk", "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}
}
TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,))  # each chunk's wait awaited on the loop


async def chunks(work: Work) -> AsyncIterator[str]:
    for _ in range(work.tasks):
        await asyncio.sleep(work.io_s)  # the event loop serves other requests meanwhile
        fib(work.cpu_n)
        yield json.dumps(reply("streamasync", work)) + "\n"


async def endpoint(work: Work = Depends(work_query)) -> StreamingResponse:
    return StreamingResponse(chunks(work), media_type="application/x-ndjson")
