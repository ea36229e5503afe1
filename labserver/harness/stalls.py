"""Stalls on purpose (lesson 08): the server's event loop held for `stall_ms` every `every_s` seconds.

One request to the `blocking` pattern (time.sleep inside an `async def`) holds its worker's
event loop for its whole `io_ms`: every other request of that worker waits it out. Sent on a
timer while a measurement runs, it makes a server that is fast but stalls now and then, the
case in which a closed loop's latency misleads (coordinated omission).
"""

from __future__ import annotations

import contextlib
import threading
import urllib.request

from labserver.checks import positive, whole
from labserver.demo.work import IO_MS_MAX


@contextlib.contextmanager
def stalls(server, every_s: float, stall_ms: int):
    """While the block runs, stall `server`'s loop for `stall_ms` every `every_s` s (the first after `every_s`)."""
    positive("every_s", every_s)
    whole("stall_ms", stall_ms, 1, IO_MS_MAX)
    stop = threading.Event()
    url = f"{server.url}/blocking?io_ms={stall_ms}"

    def stall_now_and_then() -> None:
        while not stop.wait(every_s):
            with contextlib.suppress(OSError):  # a stall that failed is one stall fewer, not an error
                urllib.request.urlopen(url, timeout=stall_ms / 1000 + 30).read()

    thread = threading.Thread(target=stall_now_and_then, name="stalls", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=stall_ms / 1000 + 31)
