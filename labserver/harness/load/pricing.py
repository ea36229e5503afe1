"""Each run priced before it starts, from a few requests on its own server: a prediction that never reads the run.

A run's `predicted_rps` (collect.py) is priced with the CPU the run itself measured: it explains
the run after it. Its before-prediction (`predicted_before_rps`) is priced only from what is
known before Locust starts: the server's settings, the usable cores, the load generator's CPU per
request (validity.GENERATOR_RPS), and these prices, measured on the same server a moment before
(measurement.py):

- S, one request's time alone, as a client on this machine sees it;
- the server's CPU per request by where it ran: the workers' event loops (each worker's main
  thread), their other threads (the thread pool), and the rest of the server's processes
  (process-pool children).

A make-up (the server's settings and Python, the pattern and its work) is priced once per process,
as calibrate.service_time is, so that a lesson's cell run again costs nothing; `forget` prices again.
Make-ups that differ only in their waits send the same requests without them: their CPU is priced
once, by the first, and each measures only its own S. Both runs' before-predictions then read one price
of one CPU, as a lesson's ratio of the two compares them. A price that sets AGAIN_FROM runs or more is
taken a second time, after every other make-up's first, and the cheaper kept (`price_again`).
"""

from __future__ import annotations

import collections
import dataclasses
import http.client
import math
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

from labserver.demo import cpus
from labserver.demo.settings import Settings
from labserver.harness.load import measurement, validity
from labserver.harness.load.client import PricingError
from labserver.harness.plans.plan import Before, Foreseen, Options, Stage
from labserver.theory.demand import OneUser

if TYPE_CHECKING:
    from labserver.harness.load import calibrate
from labserver.theory.bottlenecks import MACHINE_BOUND, Bottleneck
from labserver.theory.model import Prediction

# What the load generator pays per request, priced beforehand: one FastHttpUser process on its core
GENERATOR_MS = 1000 / validity.GENERATOR_RPS
# ... which is measured (calibrate.generator_price) where it decides a prediction: the least a process sends on its
# core (GENERATOR_RPS) names it, or it is this share or more of the server's CPU per request on shared cores
GENERATOR_SHARE = 0.1
# ... and measured on the route itself where its replies are this big or bigger: Locust reads every byte, and a reply
# of a megabyte or more costs it several times a small one's price
BIG_REPLY_BYTES = 64 * 1024
NOT_PRICED = "not priced"
# A price that sets this many of a plan's runs or more is taken again, apart from the first: the host runs this
# machine's cores at up to 1.5 times their best time in spells of seconds (docs/evidence.md), and one pricing of a
# fraction of a second in a spell would set every one of those runs' predictions. Fewer runs, fewer seconds to spend
AGAIN_FROM = 4

_priced: dict[Hashable, OneUser] = {}
_hot: dict[Hashable, OneUser] = {}  # the first pricing of each set of requests without their waits (_hot_key)
_members: dict[Hashable, list[Hashable]] = {}  # the make-ups (_key) priced with each (_hot_key)
_hot_again: set[Hashable] = set()  # the sets of requests priced a second time (price_again)
_again: set[Hashable] = set()  # make-ups priced a second time (again)


def before(stages: Sequence[Stage], options: Options) -> list[Stage]:
    """`stages`, each with its before-prediction (`Stage.before`), priced on its own server where needed.

    Silent: a caller's output may be read line by line (a kernel's, a test's); how long each make-up took to
    price is in its runs' rows (`one_user_s`). A price that sets AGAIN_FROM of them or more is taken again once
    every make-up has its first (`price_again`)."""
    first = [dataclasses.replace(stage, before=foresee(stage, options)) for stage in stages]
    priced = [s for s in first if s.before is not None and s.before.one_user is not None]
    sets = collections.Counter(_hot_key(s) for s in priced)
    again = [s for s in priced if sets[_hot_key(s)] >= AGAIN_FROM]
    for stage in again:
        price_again(stage)
    return [dataclasses.replace(stage, before=foresee(stage, options)) for stage in stages] if again else first


def foresee(stage: Stage, options: Options, settings: Settings | None = None) -> Before:
    """One stage's before-prediction: the lesson's own where it made one before the run, else the model's (or the
    lesson's function of a Demand) priced with one user's requests on the stage's server. A run that cannot be
    priced gets none, and says why: the run itself goes on. `settings`: a change to the server's, priced with the
    server's prices as it runs now, before the change is made (labserver/yourapp's advice)."""
    given = stage.predicted
    if isinstance(given, Prediction):
        return Before(given, None, "lesson")
    if isinstance(given, Foreseen):
        return Before(given.before, given.prices, "lesson")
    if options.expect_failures:
        return Before(stage.prediction(options, _cores(stage), settings=settings), None, "not modelled")
    try:
        one = one_user(stage)
    except (PricingError, OSError, http.client.HTTPException) as e:
        return Before(Prediction(math.nan, math.nan, f"{NOT_PRICED}: {e}"), None, NOT_PRICED)
    generator_ms, rest_ms = GENERATOR_MS, 0.0
    demand = one.demand(generator_ms, options.processes)
    p = stage.prediction(options, _cores(stage), demand=demand, settings=settings)
    big = one.reply_bytes >= BIG_REPLY_BYTES and options.master is None
    if big or _generator_decides(p, one, options):
        price = _generator_price(stage if big else None)
        generator_ms, rest_ms = price.locust_ms, price.rest_ms
        demand = one.demand(generator_ms, options.processes, rest_ms)
        p = stage.prediction(options, _cores(stage), demand=demand, settings=settings)
    return Before(p, one, "lesson" if callable(given) else "one user", generator_ms)


def _generator_decides(p: Prediction, one: OneUser, options: Options) -> bool:
    """Whether the load generator's price decides a prediction made with GENERATOR_MS: it names the generator, or the
    machine's shared cores with the generator a tenth or more of what each request costs them. Not where the
    generators run on other machines (classroom mode): their cores are not this machine's."""
    if options.master is not None or not math.isfinite(p.rps):
        return False
    if p.bottleneck == Bottleneck.GENERATOR:
        return True
    return p.bottleneck in MACHINE_BOUND and GENERATOR_SHARE * (one.worker_ms + one.pool_ms) <= GENERATOR_MS


def _generator_price(on: Stage | None = None) -> calibrate.GeneratorPrice:
    from labserver.harness.load import calibrate  # it measures with run_plan, whose module imports this one

    # one price per route and server, whatever the users: _key's last two (the requests in flight, the connections)
    # change the server's CPU, not what Locust pays to read a reply
    return calibrate.generator_price() if on is None else calibrate.generator_price_on(on, _key(on)[:-2])


def price_generator(stage: Stage, *, again: bool = False) -> None:
    """Where `stage`'s route answers with big replies, the load generator priced on it, as foresee reads it: a first
    round, or `again` (once per make-up), a second apart from the first, the cheaper kept."""
    if stage.route is not None and one_user(stage).reply_bytes >= BIG_REPLY_BYTES:
        from labserver.harness.load import calibrate  # it measures with run_plan, whose module imports this one

        calibrate.generator_price_on(stage, _key(stage)[:-2], again=again)


def _cores(stage: Stage) -> float:
    server = stage.server
    return cpus.cores() if getattr(server, "same_machine", True) else server.cores()


def _key(stage: Stage) -> tuple[Hashable, ...]:
    """What sets a one-user price: the server's settings, its Python and cores, and the pattern's work (a route of
    one's own: the route, on that server)."""
    s, w = stage.server, stage.workload
    python = getattr(getattr(s, "python", None), "path", None)
    server = (type(s).__name__, repr(getattr(s, "settings", None)), str(python))
    if stage.route is not None:  # a route of one's own: its work is its own, whatever the model reads it as
        r = stage.route
        route = (r["method"], r["path"], r.get("body"), tuple(r.get("headers", {}).items()))
        return (*server, s.url, *route, *measurement.in_flight(stage))
    return (*server, w.pattern, w.tasks, w.io_ms, w.cpu_n, *measurement.in_flight(stage))


def forget() -> None:
    """Price every make-up again from the next run on (after the machine's load changed, say)."""
    _priced.clear()
    _hot.clear()
    _members.clear()
    _hot_again.clear()
    _again.clear()


def _hot_key(stage: Stage) -> tuple[Hashable, ...]:
    """What sets the requests a stage's CPU is priced with: its _key, less the waits they leave out (`io_ms`).
    A make-up priced with its waits (waits_kept), or a route of one's own, is its own."""
    key = _key(stage)
    if stage.route is not None or measurement.waits_kept(stage.workload):
        return key
    return _key(dataclasses.replace(stage, workload=dataclasses.replace(stage.workload, io_ms=0)))


def one_user(stage: Stage, tries: int = 1) -> OneUser:
    """The stage's one-user prices, measured once per make-up in this process: of `tries` pricings in a row, the
    one that cost the server least CPU per request (the least disturbed, as timeit keeps the least of its runs)."""
    key = _key(stage)
    if key not in _priced:
        hot = _hot_key(stage)
        twin = _hot.get(hot)
        if twin is not None:  # the same requests, without their waits, priced for another make-up
            _priced[key] = measurement.measure(stage, cpu_of=twin)
        else:
            _priced[key] = min((measurement.measure(stage) for _ in range(tries)), key=window_cpu)
            _hot[hot] = _priced[key]
        _members.setdefault(hot, []).append(key)
    return _priced[key]


def price_again(stage: Stage) -> None:
    """The stage's requests without their waits priced a second time, once per set of them in this process; where
    they cost the server less CPU than the first time, every make-up priced with them reads the cheaper (each its
    own S). The seconds it took count in the stage's own make-up's."""
    hot = _hot_key(stage)
    if hot in _hot_again or hot not in _hot:
        return
    _hot_again.add(hot)
    fresh = measurement.measure(stage)
    key = _key(stage)
    _priced[key] = dataclasses.replace(_priced[key], seconds=_priced[key].seconds + fresh.seconds)
    if window_cpu(fresh) >= window_cpu(_hot[hot]):
        return
    cpu = {f: getattr(fresh, f) for f in ("loop_ms", "threads_ms", "pool_ms", "busy_ms", "neighbours_ms", "probe_ms")}
    _hot[hot] = fresh
    for member in _members.get(hot, [key]):
        _priced[member] = dataclasses.replace(_priced[member], **cpu)


def again(stage: Stage) -> OneUser:
    """The stage priced a second time, once per make-up in this process as one_user is, and of the two, the one
    that cost the server least CPU per request: a repeat made apart from the first (a round of other routes
    between), where a slow moment that covers pricings in a row would not."""
    key = _key(stage)
    if key not in _again:
        fresh = measurement.measure(stage)
        kept = _priced.get(key)
        _priced[key] = fresh if kept is None or window_cpu(fresh) < window_cpu(kept) else kept
        _again.add(key)
    return _priced[key]


def window_cpu(one: OneUser) -> float:
    return one.worker_ms + one.pool_ms
