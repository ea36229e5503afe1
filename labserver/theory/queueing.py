"""Open arrivals: what queueing theory predicts when requests arrive on their own schedule (lesson 08).

A closed loop (every lesson before 08) can never send faster than the server answers. Real
traffic can: requests arrive at a rate λ whether or not the last ones were served. A server
with c slots (the 40-thread pool; one event loop held by a blocking call) and a service time S
per request is then loaded at ρ = λ S / c, and:

- below ρ = 1 requests wait only when, by chance, all c slots are busy: the M/M/c queue gives
  that chance (Erlang's C formula) and the mean wait. Our endpoints' service is a fixed sleep,
  not an exponential one: for deterministic service (M/D/c) the mean wait is close to half of
  M/M/c's (exactly half for c = 1, Pollaczek–Khinchine), the approximation used here;
- above ρ = 1 no formula has a steady state: the backlog grows by (λ − c / S) every second, and
  a request that arrives t seconds into the overload waits for the whole backlog before it;
- a server that turns requests away once q are waiting (503 + Retry-After) is an M/M/c/K
  queue, K = c + q in all: it keeps its latency bounded, and in overload it sheds about 1 − (c / S) / λ of them.

Every function takes seconds and requests per second, and returns seconds.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from labserver.checks import positive, whole
from labserver.theory.model import Prediction, furthest


@dataclass(frozen=True)
class Queue:
    """What a queue with c slots, service S and arrivals λ predicts (seconds)."""

    rho: float  # utilisation λ S / c
    wait_chance: float  # chance an arrival finds every slot busy (Erlang C); 1 at ρ ≥ 1
    mean_s: float  # mean latency: S plus the mean wait (inf at ρ ≥ 1: no steady state)
    p95_s: float  # 95th percentile latency (inf at ρ ≥ 1)


def utilisation(rate: float, service_s: float, slots: int) -> float:
    """ρ = λ S / c."""
    return rate * service_s / slots


def erlang_c(slots: int, load: float) -> float:
    """Chance that an arrival waits in M/M/c with `slots` servers and offered `load` = λ S (Erlangs).

    Computed through Erlang B's stable recursion (no factorials): B(0) = 1,
    B(k) = a B(k-1) / (k + a B(k-1)); C = c B / (c − a (1 − B)).
    """
    whole("slots", slots, 1)
    if load <= 0:
        return 0.0
    if load >= slots:
        return 1.0
    b = 1.0
    for k in range(1, slots + 1):
        b = load * b / (k + load * b)
    return slots * b / (slots - load * (1 - b))


def open_queue(rate: float, service_s: float, slots: int, deterministic: bool = True) -> Queue:
    """Mean and p95 latency of a c-slot server under Poisson arrivals at `rate` (M/D/c by default).

    The wait, given that there is one, is close to exponential with rate c/S − λ (exact for
    M/M/c); for deterministic service both its mean and that scale are halved. The p95 is the
    service time plus the wait exceeded by 5% of arrivals.
    """
    positive("rate", rate)
    positive("service_s", service_s)
    whole("slots", slots, 1)
    rho = utilisation(rate, service_s, slots)
    if rho >= 1:
        return Queue(rho, 1.0, math.inf, math.inf)
    chance = erlang_c(slots, rate * service_s)
    drain = slots / service_s - rate  # how fast a queue empties, per second, when every slot is busy
    scale = 0.5 if deterministic else 1.0
    mean_wait = scale * chance / drain
    tail = 0.05
    wait_95 = scale * math.log(chance / tail) / drain if chance > tail else 0.0
    return Queue(rho, chance, service_s + mean_wait, service_s + wait_95)


def latencies(rhos: Sequence[float], service_s: float, slots: int) -> pd.DataFrame:
    """Per utilisation ρ: the arrival rate that gives it and the mean and p95 latency in ms (`open_queue`, M/D/c)."""
    rows = []
    for rho in rhos:
        q = open_queue(rho * slots / service_s, service_s, slots)
        rows.append({"rho": rho, "rate": rho * slots / service_s, "mean_ms": q.mean_s * 1000, "p95_ms": q.p95_s * 1000})
    return pd.DataFrame(rows, columns=["rho", "rate", "mean_ms", "p95_ms"])


def waits(rhos: Sequence[float], slots: Sequence[int]) -> pd.DataFrame:
    """The mean wait, in service times, at each utilisation ρ (rows): for each count of slots (columns), and for one
    slot shared in turns.

    M/D/c, as `open_queue` prices it: where waiting starts to show depends on the slots. One slot (an
    event loop busy computing, each request run to its end) waits ρ / (2 (1 − ρ)) services, 2 at
    ρ = 0.8; twenty (a thread pool waiting on I/O) wait a few hundredths there. `def` threads that
    compute share one core in the GIL's turns of 5 ms: processor sharing (`shared_wait`), 4 at 0.8.
    """
    table = {f"{c} slot{'s' * (c > 1)}": [open_queue(rho * c, 1.0, c).mean_s - 1.0 for rho in rhos] for c in slots}
    table["1 slot, shared in turns"] = [shared_wait(rho) for rho in rhos]
    return pd.DataFrame(table, index=pd.Index(rhos, name="ρ"))


def shared_wait(rho: float) -> float:
    """The mean wait, in its own service times, of a request on one core shared in turns among all the requests on it
    (processor sharing, M/G/1-PS): a request of CPU x takes x / (1 − ρ), whatever the others' CPU, so it waits
    ρ / (1 − ρ) of its own x. A short request beside long ones waits little (lesson 14); one as long as the others, 4×
    at ρ = 0.8."""
    return rho / (1 - rho)


# ρ from 0.05 to 0.97 for the model's curve: it has no steady state at 1
CURVE_RHOS = tuple(x / 100 for x in range(5, 98))


def backlog(rate: float, service_s: float, slots: int, t_s: float) -> float:
    """Requests waiting t seconds into an overload that began with an empty queue: (λ − c / S) t, at least 0."""
    return max(0.0, (rate - slots / service_s) * t_s)


def overload_latency_s(rate: float, service_s: float, slots: int, t_s: float) -> float:
    """Latency of a request arriving t seconds into the overload: its own service after the backlog ahead of it.

    The backlog drains at c / S per second, so it waits backlog × S / c = (ρ − 1) t.
    """
    return service_s + backlog(rate, service_s, slots, t_s) * service_s / slots


def overload_line(rate: float, service_s: float, slots: int, sending_s: float) -> pd.DataFrame:
    """`overload_latency_s` in ms (`latency_ms`) every tenth of a second (`t_s`) of an overload `sending_s` long."""
    t_s = [t / 10 for t in range(round(sending_s * 10) + 1)]
    return pd.DataFrame({"t_s": t_s, "latency_ms": [overload_latency_s(rate, service_s, slots, t) * 1000 for t in t_s]})


def replay(arrivals_s: Sequence[float], hold_s: float, slots: int) -> list[float]:
    """Each arrival's wait for a slot (s), in the order given: `slots` slots, first come first served, held `hold_s`.

    (ρ − 1) t is this queue's average over every Poisson schedule. One run's schedule has chance
    runs of early and late arrivals that move a request's wait by a tenth of a second and more
    (√(λ t) arrivals, each 1/capacity s of wait); replayed on the run's own arrival times, the
    queue carries them too, and what is left between it and the measurement is the server.
    """
    positive("hold_s", hold_s)
    whole("slots", slots, 1)
    free = [0.0] * slots  # when each slot is next free: a heap, its root the soonest
    waits = [0.0] * len(arrivals_s)
    for i in sorted(range(len(arrivals_s)), key=arrivals_s.__getitem__):
        start = max(arrivals_s[i], heapq.heappop(free))
        heapq.heappush(free, start + hold_s)
        waits[i] = start - arrivals_s[i]
    return waits


def shed_share(rate: float, service_s: float, slots: int, limit: int) -> float:
    """Share of arrivals turned away by a server that holds at most `slots` + `limit` requests (M/M/c/K).

    Stationary M/M/c/K: p(n) ∝ a^n / n! up to c, then a^c / c! (a / c)^(n - c) up to K = c + limit;
    an arrival is turned away when it finds K. In deep overload this tends to 1 − (c / S) / λ.
    """
    positive("rate", rate)
    positive("service_s", service_s)
    whole("slots", slots, 1)
    whole("limit", limit, 0)
    a = rate * service_s
    # relative weights p(n) / p(0), in a running product to stay finite for large c
    weight, total = 1.0, 1.0
    for n in range(1, slots + limit + 1):
        weight *= a / min(n, slots)
        total += weight
    return weight / total


def fluid_shed_share(rate: float, service_s: float, slots: int) -> float:
    """The overload's share that capacity cannot serve: 1 − (c / S) / λ, 0 below capacity."""
    positive("rate", rate)
    return max(0.0, 1 - slots / service_s / rate)


def accepted_bound_s(service_s: float, slots: int, limit: int) -> float:
    """The longest an accepted request takes with at most `limit` waiting for `slots` slots: S (1 + ⌈q / c⌉).

    It waits for at most ⌈q / c⌉ services (q = `limit`) of the requests ahead of it, then its own.
    """
    return service_s * (1 + math.ceil(limit / slots))


@dataclass(frozen=True)
class Shedding:
    """What M/M/c/K says of a server that turns requests away once `limit` (q; K = c + q) wait, at utilisation ρ."""

    rho: float
    limit: int
    shed: float  # share of arrivals turned away (shed_share)
    fluid: float  # the overload's share that capacity cannot serve, 1 − (c / S) / λ (fluid_shed_share)
    bound_ms: float  # the longest an accepted request takes, S (1 + ⌈q / c⌉), in ms (accepted_bound_s)

    def frame(self) -> pd.DataFrame:
        """One row to show before the run: ρ, q, the shed share both ways and the accepted requests' bound."""
        return pd.DataFrame(
            {
                "ρ": [self.rho],
                "q (waiting)": [self.limit],
                "shed (M/M/c/K)": [self.shed],
                "shed (fluid limit)": [self.fluid],
                "accepted latency bound (ms)": [self.bound_ms],
            }
        )


def shedding(rho: float, service_s: float, slots: int, limit: int) -> Shedding:
    """M/M/c/K's shed share, the fluid limit's and the accepted requests' bound, with arrivals at `rho` c / S."""
    rate = rho * slots / service_s
    return Shedding(
        rho=rho,
        limit=limit,
        shed=shed_share(rate, service_s, slots, limit),
        fluid=fluid_shed_share(rate, service_s, slots),
        bound_ms=accepted_bound_s(service_s, slots, limit) * 1000,
    )


def predict_open(rate: float, service_s: float, slots: int, limit: int | None = None) -> Prediction:
    """What an open loop at `rate` gets from c slots of service S: the throughput served and the mean latency.

    Below capacity (c / S) every arrival is served, after the M/D/c mean wait; above it the
    slots serve c / S and the rest queue without end (no mean latency: it grows with time,
    see overload_latency_s). With a queue `limit` (load shedding), the accepted share is
    1 − shed_share, and an accepted request waits at most `limit` / c services behind others.
    """
    capacity = slots / service_s
    rho = utilisation(rate, service_s, slots)
    if limit is not None:
        served = rate * (1 - shed_share(rate, service_s, slots, limit))
        worst_s = accepted_bound_s(service_s, slots, limit)
        return Prediction(served, worst_s * 1000, f"threads ({slots}) and a queue of {limit}: ρ {rho:.2f}")
    if rate < capacity:
        return Prediction(rate, open_queue(rate, service_s, slots).mean_s * 1000, f"arrivals (open loop, ρ {rho:.2f})")
    return Prediction(capacity, math.inf, f"threads ({slots}), overloaded: ρ {rho:.2f}")


def against_model(runs: pd.DataFrame, rhos: Sequence[float], service_s: float, slots: int) -> pd.DataFrame:
    """An open-loop sweep's runs beside M/D/c at the rate each schedule sent, with S measured.

    `rhos` are the utilisations planned, in the runs' order (`target_rho`); `rho` is the one the
    schedule sent (`scheduled_rate` × S / c), and `model_mean_ms`, `model_p95_ms` what `open_queue`
    gives there.
    """
    out = runs.assign(target_rho=list(rhos), rho=runs["scheduled_rate"] * service_s / slots)
    queues = [open_queue(rate, service_s, slots) for rate in runs["scheduled_rate"]]
    return out.assign(model_mean_ms=[q.mean_s * 1000 for q in queues], model_p95_ms=[q.p95_s * 1000 for q in queues])


INTENDED = {"intended_mean_ms": "mean_ms", "intended_p95_ms": "p95_ms"}  # an open loop's latency, as a visitor waits


@dataclass(frozen=True)
class Fit:
    """How an open-loop sweep (`against_model`'s frame) fits M/D/c where it holds, and its run nearest a ρ."""

    measured: pd.DataFrame  # each run's `rho`, `mean_ms`, `p95_ms`, from the intended send: what a visitor waits
    low: pd.DataFrame  # the runs planned at ρ ≤ `up_to`: near ρ = 1 a short run has not settled, and ρ's errors magnify
    furthest: float  # their measured / modelled mean latency furthest from 1, either way
    near: pd.Series  # the run sent nearest ρ `near`

    @property
    def miss(self) -> float:
        """How far `furthest` lies from 1: 0.04 where every run is within 4% of the model."""
        return abs(self.furthest - 1)


def fit(sweep: pd.DataFrame, up_to: float = 0.8, near: float = 0.6) -> Fit:
    """Read `against_model`'s sweep: the fit of its runs planned at ρ ≤ `up_to`, and its run sent nearest ρ `near`."""
    low = sweep[sweep["target_rho"] <= up_to]
    return Fit(
        measured=sweep[["rho", "intended_mean_ms", "intended_p95_ms"]].rename(columns=INTENDED),
        low=low,
        furthest=furthest(low["intended_mean_ms"] / low["model_mean_ms"]),
        near=sweep.iloc[(sweep["rho"] - near).abs().argmin()],
    )
