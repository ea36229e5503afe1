"""The interpreter pool's start: where this Python has one, where it has none, and a server with procs=0."""

import sys
from typing import ClassVar

import pytest

from labserver.demo import subinterpreters


class FakePool:
    made: ClassVar[list["FakePool"]] = []

    def __init__(self, max_workers: int) -> None:
        self.max_workers, self.submitted, self.shut = max_workers, [], False
        FakePool.made.append(self)

    def submit(self, fn, *args):
        self.submitted.append((fn, args))

    def shutdown(self, wait: bool, cancel_futures: bool) -> None:
        self.shut = (wait, cancel_futures)


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="3.13 and later may have one")
def test_a_python_before_3_13_has_none_and_says_what_it_needs():
    made, missing = subinterpreters.executor_class()
    assert made is None
    assert "3.14" in missing and "interpreters-pep-734" in missing
    assert subinterpreters.start(4) is None


def test_the_pool_starts_on_its_first_call_with_every_interpreter_and_stops_once(monkeypatch):
    monkeypatch.setattr(subinterpreters, "executor_class", lambda: (FakePool, ""))
    FakePool.made.clear()
    lazy = subinterpreters.LazyPool(3)
    assert FakePool.made == []  # nothing until a request asks
    pool = lazy()
    assert lazy() is pool and len(FakePool.made) == 1
    assert pool.max_workers == 3 and len(pool.submitted) == 3  # each interpreter started at once
    lazy.shutdown()
    assert pool.shut == (True, True)
    lazy.shutdown()  # a second stop does nothing


def test_no_pool_where_this_python_has_none_or_procs_is_0(monkeypatch):
    monkeypatch.setattr(subinterpreters, "executor_class", lambda: (None, "Python 3.11: needs 3.14"))
    lazy = subinterpreters.LazyPool(3)
    assert lazy() is None and lazy.missing == "Python 3.11: needs 3.14"
    monkeypatch.setattr(subinterpreters, "executor_class", lambda: (FakePool, ""))
    none = subinterpreters.LazyPool(0)
    assert none() is None and "procs=0" in none.missing
