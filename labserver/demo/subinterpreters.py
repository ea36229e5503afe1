"""The interpreter pool: PEP 734's `InterpreterPoolExecutor`, from the standard library (3.14) or its backport.

Each interpreter of the pool runs in a thread of the worker's process with a GIL of its own, so
CPU work sent to it computes on as many cores as the pool has interpreters, as a process pool's
does, inside one process. Python 3.13 has the private `_interpreters` module the backport
(`interpreters-pep-734`, requirements-freethreaded.txt) builds on; older Pythons have neither.
The standard library only: every worker imports this module.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor


def executor_class() -> tuple[Callable[..., Executor] | None, str]:
    """`InterpreterPoolExecutor` where this Python has one, else None and what is missing, in words."""
    try:
        from concurrent.futures import InterpreterPoolExecutor  # type: ignore[attr-defined,unused-ignore]  # 3.14

        return InterpreterPoolExecutor, ""
    except ImportError:
        pass
    try:
        from interpreters_backport.concurrent.futures.interpreter import (  # type: ignore[import-not-found,unused-ignore]
            InterpreterPoolExecutor,
        )

        return InterpreterPoolExecutor, ""
    except ImportError:
        import sys

        version = ".".join(map(str, sys.version_info[:2]))
        if sys.version_info >= (3, 13):
            return None, f"Python {version} without the interpreters-pep-734 backport (pip install it)"
        return None, f"Python {version}: an interpreter pool needs 3.14, or 3.13 with the interpreters-pep-734 backport"


def start(size: int) -> Executor | None:
    """A pool of `size` interpreters, or None where this Python has none (`executor_class` says why)."""
    made, _ = executor_class()
    return made(max_workers=size) if made is not None and size > 0 else None


class LazyPool:
    """A worker's interpreter pool, started on its first request: a server that never serves
    /interpreterpool pays nothing for it. The event loop's one thread calls it, so no lock."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._pool: Executor | None = None
        _, missing = executor_class()
        self.missing = missing or ("" if size > 0 else "this server was started with procs=0")

    def __call__(self) -> Executor | None:
        if self._pool is None and not self.missing:
            self._pool = start(self.size)
            # Start every interpreter now, not one per queued task: each imports what its tasks need.
            for _ in range(self.size):
                self._pool.submit(abs, 0)  # type: ignore[union-attr]
        return self._pool

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
