"""What the lab measures once per kernel before the runs that need it: the service time S of the thread-pool
endpoint (lessons 08 and 09), and the load generator's price per request (`generator_price`, pricing.py; on a
route whose replies are big, `generator_price_on`).

Every open-loop prediction needs S: how long a request holds one of the `threads` slots when
nothing queues. A closed loop of fewer users than threads measures it: its mean latency is the
sleep and what the server adds to it. Lesson cells call `service_time`; the first call with a
given set of settings measures, later calls in the same kernel reuse that measurement, so any run
cell can be re-run on its own after the setup cell, and an instructor's re-run costs no extra
calibration.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

from labserver.harness.load.measurement import HOT_MOST
from labserver.harness.load.run import run_plan
from labserver.harness.plans.plan import Stage
from labserver.harness.rows import results
from labserver.harness.servers.launcher import LabServer
from labserver.theory.model import Prediction

SHARE = 0.6  # users per thread in the calibrating closed loop: fewer than the threads, so nothing queues


@dataclass(frozen=True)
class Calibration:
    """S measured on a server of `threads` threads, and the run that measured it."""

    service_s: float
    threads: int
    run: results.RunResult

    @property
    def capacity(self) -> float:
        """Requests per second the pool serves when every slot is busy: c / S."""
        return self.threads / self.service_s

    def __str__(self) -> str:
        return (
            f"S = {self.service_s * 1000:.1f} ms (closed loop of {self.run.row['users']} users, "
            f"run {self.run.row['run_id']}): capacity {self.capacity:.0f} req/s"
        )


_measured: dict[tuple, Calibration] = {}


def service_time(
    *, threads: int, io_ms: int, duration_s: int, lesson: str | None = None, fresh: bool = False
) -> Calibration:
    """S of the `threadpool` endpoint at `io_ms`, measured once per kernel for these settings.

    `fresh` measures again (and keeps the new value), say after the machine's load changed.
    """
    key = (threads, io_ms, duration_s)
    if fresh or key not in _measured:
        users = max(1, round(SHARE * threads))
        with LabServer(threads=threads) as server:
            run = run_plan(
                server,
                [{"pattern": "threadpool", "users": users, "io_ms": io_ms}],
                duration_s=duration_s,
                lesson=lesson,
            )[0]
        _measured[key] = Calibration(run.row["mean_ms"] / 1000, threads, run)
        print(f"measured {_measured[key]}")
    else:
        print(f"{_measured[key]}; measured earlier in this kernel (fresh=True measures again)")
    return _measured[key]


# Users of the generator's pricing run: enough requests in flight that Locust reads several replies per wake-up,
# as it does in the busy runs whose prediction its price decides (a few thousand req/s)
GENERATOR_USERS = 200
GENERATOR_S = 2
GENERATOR_TRIES = 2  # runs that price Locust on a route of one's own (generator_price_on)


@dataclass(frozen=True)
class GeneratorPrice:
    """What one FastHttpUser Locust process costs per request when kept busy, and what the rest of the machine (the
    kernel's loopback networking) costs meanwhile, measured by a short run on a server of the lab's own."""

    locust_ms: float
    rest_ms: float
    rps: float
    run_id: str


_generator: list[GeneratorPrice] = []
_generator_on: dict[Hashable, GeneratorPrice] = {}
_generator_again: set[Hashable] = set()  # make-ups whose generator was priced a second time


def generator_price(*, fresh: bool = False) -> GeneratorPrice:
    """The load generator's price, measured once per kernel (a Locust start and GENERATOR_S s of load): the server's
    event loop computes all the time, so Locust sends as fast as one loop answers, and reads its replies in bunches
    as it does in a busy run."""
    if fresh or not _generator:
        with LabServer(procs=0) as server:
            run = run_plan(
                server,
                [
                    {
                        "pattern": "sequential",
                        "users": GENERATOR_USERS,
                        "io_ms": 0,
                        "predicted": Prediction(math.nan, math.nan, "not modelled: the run prices the load generator"),
                    }
                ],
                duration_s=GENERATOR_S,
                progress=False,
            )[0]
        _generator[:] = [_price_of(run.row)]
    return _generator[0]


def generator_price_on(stage: Stage, key: Hashable, *, again: bool = False) -> GeneratorPrice:
    """The load generator's price on `stage`'s own route and server (`key`: its make-up, as pricing keys it), measured
    once per kernel by short runs of HOT_MOST users: a route whose replies are big costs Locust by the byte. Of
    GENERATOR_TRIES runs in one Locust process, the cheapest: a Locust process's first run on a route can cost it
    twice what the next does, and one_user keeps its least pricing for the same reason. `again`: priced once more in
    a new Locust process, the cheaper kept, once per make-up, as pricing.again prices the server a second time
    apart from the first: a slow moment of a few seconds covers runs in a row, and read the price a third dearer."""
    if key not in _generator_on or (again and key not in _generator_again):
        run = stage.as_run(HOT_MOST)
        run["predicted"] = Prediction(math.nan, math.nan, "not modelled: the run prices the load generator")
        tries = [run] * GENERATOR_TRIES
        priced = [_price_of(r.row) for r in run_plan(stage.server, tries, duration_s=GENERATOR_S, progress=False)]
        kept = _generator_on.get(key)
        _generator_on[key] = min([*priced, *([kept] if kept else [])], key=_locust_ms)
        if again:
            _generator_again.add(key)
    return _generator_on[key]


def _locust_ms(price: GeneratorPrice) -> float:
    return price.locust_ms if math.isfinite(price.locust_ms) else math.inf


def _price_of(row: dict) -> GeneratorPrice:
    rest = max(0.0, float(row["other_cpu"])) / row["rps"] * 1000 if row["rps"] > 0 else math.nan
    return GeneratorPrice(float(row["locust_ms"]), rest, float(row["rps"]), str(row["run_id"]))
