"""The database routes time each use of a pooled connection: from lent to returned, on a stand-in pool."""

import asyncio
from contextlib import asynccontextmanager, contextmanager

import pytest

from labserver.demo import shop
from labserver.demo.telemetry import HoldMeter


class Pool:
    """A pool whose `connection()` lends "conn", or fails before lending when `empty`; it logs each step."""

    def __init__(self, empty=False):
        self.empty, self.log = empty, []

    @contextmanager
    def connection(self):
        if self.empty:
            raise TimeoutError("no connection within the pool's timeout")
        self.log.append("lent")
        try:
            yield "conn"
        finally:
            self.log.append("returned")


class AsyncPool(Pool):
    @asynccontextmanager
    async def connection(self):
        with super().connection() as conn:
            yield conn


def test_a_use_counts_once_the_connection_is_back():
    pool, meter = Pool(), HoldMeter()
    with shop.lent(pool, meter) as conn:
        assert conn == "conn" and meter.totals() == (0.0, 0)  # still held
    assert pool.log == ["lent", "returned"]
    held_s, uses = meter.totals()
    assert uses == 1 and held_s >= 0


def test_a_failed_query_held_its_connection_too():
    pool, meter = Pool(), HoldMeter()
    with pytest.raises(ValueError), shop.lent(pool, meter):
        raise ValueError("the query failed")
    assert meter.totals()[1] == 1


def test_no_connection_lent_is_no_use():
    meter = HoldMeter()
    with pytest.raises(TimeoutError), shop.lent(Pool(empty=True), meter):
        pass
    assert meter.totals() == (0.0, 0)


def test_the_async_pool_s_uses_are_timed_alike():
    pool, meter = AsyncPool(), HoldMeter()

    async def two_uses():
        for _ in range(2):
            async with shop.alent(pool, meter) as conn:
                assert conn == "conn"
                await asyncio.sleep(0)  # the loop runs others meanwhile: still held

    asyncio.run(two_uses())
    assert meter.totals()[1] == 2 and pool.log == ["lent", "returned"] * 2
