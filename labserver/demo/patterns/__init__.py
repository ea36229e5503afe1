"""The registry of concurrency patterns: one module each, served at `/{pattern}`."""

from __future__ import annotations

from collections.abc import Callable

from labserver.checks import choice
from labserver.demo.patterns import (
    blocking,
    dependent,
    gather,
    mixed,
    offload,
    processpool,
    sequential,
    threadpool,
    wrapped,
)

PATTERNS: dict[str, Callable] = {
    "sequential": sequential.endpoint,
    "gather": gather.endpoint,
    "threadpool": threadpool.endpoint,
    "processpool": processpool.endpoint,
    "blocking": blocking.endpoint,
    "dependent": dependent.endpoint,
    "mixed": mixed.endpoint,
    "wrapped": wrapped.endpoint,
    "offload": offload.endpoint,
}


def check_pattern(name: str) -> str:
    """Return `name` if it is a known pattern; otherwise raise ValueError listing the valid ones."""
    return choice("pattern", name, PATTERNS)
