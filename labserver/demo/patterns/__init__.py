"""The registry of concurrency patterns: one module each, served at `/{pattern}`, with its traits beside it."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from labserver.checks import choice
from labserver.demo.patterns import (
    asyncdep,
    bgasync,
    bgsync,
    blocking,
    callnew,
    callreused,
    dependent,
    fanout,
    fanoutbounded,
    gather,
    gathertimeout,
    hashed,
    interpreterpool,
    mixed,
    offload,
    pooled,
    pooledinside,
    processpool,
    sequential,
    streamasync,
    streamsync,
    syncdep,
    taskgroup,
    threadpool,
    tothread,
    watchful,
    wrapped,
)
from labserver.demo.traits import Traits

_MODULES: dict[str, ModuleType] = {
    "sequential": sequential,
    "gather": gather,
    "threadpool": threadpool,
    "processpool": processpool,
    "blocking": blocking,
    "dependent": dependent,
    "mixed": mixed,
    "wrapped": wrapped,
    "offload": offload,
    "hashed": hashed,
    "interpreterpool": interpreterpool,
    "syncdep": syncdep,
    "asyncdep": asyncdep,
    "streamsync": streamsync,
    "streamasync": streamasync,
    "bgsync": bgsync,
    "bgasync": bgasync,
    "pooledinside": pooledinside,
    "pooled": pooled,
    "callnew": callnew,
    "callreused": callreused,
    "fanout": fanout,
    "fanoutbounded": fanoutbounded,
    "watchful": watchful,
    "gathertimeout": gathertimeout,
    "taskgroup": taskgroup,
    "tothread": tothread,
}
PATTERNS: dict[str, Callable] = {name: module.endpoint for name, module in _MODULES.items()}
# What the model asks of a pattern, as each module declares it beside its endpoint.
TRAITS: dict[str, Traits] = {name: module.TRAITS for name, module in _MODULES.items()}


def check_pattern(name: str) -> str:
    """Return `name` if it is a known pattern; otherwise raise ValueError listing the valid ones."""
    return choice("pattern", name, PATTERNS)
