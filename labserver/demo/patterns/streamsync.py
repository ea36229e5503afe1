"""streamsync: a `StreamingResponse` over a plain generator that waits before each chunk.

Teaches: Starlette iterates a plain generator in the thread pool, one `next()` at a time: a
generator that blocks between chunks holds a thread for most of the stream, so as many open
streams as threads fill the pool, and every `def` endpoint of the worker waits behind them.
"""

import json
import time
from collections.abc import Iterator

from fastapi import Depends
from fastapi.responses import StreamingResponse

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

# a JSON reply per chunk, a line each
RESPONSES = {
    200: {"description": "a line per chunk", "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}
}
TRAITS = Traits(computes=Where.THREAD_POOL, waits=(Hold.THREAD,))  # each chunk's wait in a pool thread


def chunks(work: Work) -> Iterator[str]:
    for _ in range(work.tasks):
        time.sleep(work.io_s)  # blocks the pool thread Starlette lent this next()
        fib(work.cpu_n)
        yield json.dumps(reply("streamsync", work)) + "\n"


async def endpoint(work: Work = Depends(work_query)) -> StreamingResponse:
    return StreamingResponse(chunks(work), media_type="application/x-ndjson")
