"""What a client timeout does to a worker that serves one request at a time (lesson 05).

A worker whose event loop is blocked answers at most one request per `service_s`. It cannot
tell that a client has given up: a request whose client timed out is still served in full when
its turn comes. Each closed-loop user sends its next request as soon as the previous one is
answered or times out. Two results follow:

- `failure_floor`: whatever order the worker takes requests in, once the queue
  (users × service_s / workers) is longer than the timeout, at least 1 − timeout / queue of
  the requests fail. A server that keeps answering a fixed group of users and lets the others
  starve comes close to it.
- `simulate` / `predict_timeouts`: a fair worker, first come first served, does worse. New
  requests wait behind requests nobody is waiting for any more, time out in turn, and add to
  the queue: the failure rate climbs towards 100% while the worker stays busy.

Where a real server lands between the two depends on the order it reads requests in (lesson
05 measures uvicorn's).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from labserver.checks import positive, whole

# A request that ends within this of its deadline counts as answered: float sums of
# service times (0.1 + 0.1 + ...) must not turn an exact tie into a timeout.
TIE_S = 1e-9
# A client timeout no run outlasts: every request waits for its answer.
NO_TIMEOUT_S = 1e9


@dataclass(frozen=True)
class Outcome:
    """One request of a simulated run."""

    user: int
    sent: float  # s since the run started
    served: float  # when the worker finished it, answered or abandoned
    ended: float  # when its client got the answer or gave up
    ok: bool  # answered within the timeout


@dataclass(frozen=True)
class TimeoutPrediction:
    requests: int  # ended within the window, answered or timed out
    failures: int  # timed out
    failure_rate: float
    rps: float  # ended per second, timeouts included: what a load generator counts
    goodput_rps: float  # answered per second: what the users got
    served_rps: float  # requests the server finished per second, abandoned ones included


def queue_s(users: int, service_s: float, workers: int = 1) -> float:
    """How long a request waits once every user has one queued: the closed loop's response time."""
    return users * service_s / workers


def failure_floor(users: int, service_s: float, timeout_s: float, workers: int = 1) -> float:
    """The least share of requests that must time out, whatever order the server takes them in.

    The server answers at most workers / service_s requests per second, each user who is not
    answered gives up once per timeout_s, and an answered user waits at most timeout_s: in
    steady state at least 1 − timeout / queue of the requests fail.
    """
    _check(users, service_s, timeout_s, 1.0, workers)
    return max(0.0, 1 - timeout_s / queue_s(users, service_s, workers))


def simulate(users: int, service_s: float, timeout_s: float, duration_s: float, workers: int = 1) -> list[Outcome]:
    """Every request that ends within `duration_s` on a fair worker: first come, first served.

    All users send their first request at 0; `workers` slots share one queue. Requests still
    waiting when the run stops are left out: the load generator never records them either.
    """
    _check(users, service_s, timeout_s, duration_s, workers)
    free = [0.0] * workers  # when each slot is next free
    pending = [(0.0, user) for user in range(users)]  # (sent, user): served in the order sent
    heapq.heapify(pending)
    outcomes = []
    while pending:
        sent, user = heapq.heappop(pending)
        done = max(sent, heapq.heappop(free)) + service_s
        heapq.heappush(free, done)  # served in full, whether or not the client still waits
        ok = done - sent <= timeout_s + TIE_S
        ended = done if ok else sent + timeout_s
        if ended <= duration_s:
            outcomes.append(Outcome(user, sent, done, ended, ok))
            heapq.heappush(pending, (ended, user))
    return outcomes


def predict_timeouts(
    users: int, service_s: float, timeout_s: float, duration_s: float, workers: int = 1, warmup_s: float = 1.0
) -> TimeoutPrediction:
    """A fair worker's run, counted like the lab counts a measured one: requests ending after `warmup_s`."""
    if not 0 <= warmup_s < duration_s:
        raise ValueError(f"warmup_s must be from 0 to less than duration_s ({duration_s}), got {warmup_s}")
    every = simulate(users, service_s, timeout_s, duration_s, workers)
    outcomes = [o for o in every if o.ended >= warmup_s]
    window_s = duration_s - warmup_s
    failures = sum(not o.ok for o in outcomes)
    return TimeoutPrediction(
        requests=len(outcomes),
        failures=failures,
        failure_rate=failures / len(outcomes) if outcomes else math.nan,
        rps=len(outcomes) / window_s,
        goodput_rps=(len(outcomes) - failures) / window_s,
        served_rps=sum(warmup_s <= o.served <= duration_s for o in every) / window_s,
    )


@dataclass(frozen=True)
class Outlook:
    """What the model says of a timeout run before it runs: the queue, the floor and a fair queue's run."""

    queue_s: float  # users × service_s / workers: how long a request waits once every user has one queued
    timeout_s: float
    floor: float  # the least share of requests that must fail, whatever the order (failure_floor)
    fair: TimeoutPrediction  # a fair worker's run, first come first served (predict_timeouts)

    def frame(self) -> pd.DataFrame:
        """One row to show beside the run: the queue, the timeout, the floor and the fair queue's failure rate."""
        return pd.DataFrame(
            {
                "queue_s": [self.queue_s],
                "timeout_s": [self.timeout_s],
                "floor (any order)": [self.floor],
                "fair queue, this run": [self.fair.failure_rate],
            }
        )


def outlook(
    users: int, service_s: float, timeout_s: float, duration_s: float, workers: int = 1, warmup_s: float = 1.0
) -> Outlook:
    """The queue, the floor and a fair queue's run of `duration_s` for `users` behind a blocked loop."""
    return Outlook(
        queue_s=queue_s(users, service_s, workers),
        timeout_s=timeout_s,
        floor=failure_floor(users, service_s, timeout_s, workers),
        fair=predict_timeouts(users, service_s, timeout_s, duration_s, workers, warmup_s),
    )


def users_answered(users: int, service_s: float, duration_s: float, workers: int = 1) -> int:
    """How many of `users` a fair queue answers at least once within `duration_s`, with no client timeout.

    A blocked worker answers one request per `service_s`: first come, first served, it reaches
    every user only if the queue (users × service_s / workers) fits in the run.
    """
    return len({o.user for o in simulate(users, service_s, NO_TIMEOUT_S, duration_s, workers)})


def goodput(row: Mapping) -> float:
    """Requests answered per second in a measured run's row: what the users got, timeouts left out.

    A load generator counts a timed-out request as a finished one, so the row's `rps` grows as
    the timeout shrinks; answered requests per second never exceed the worker's cap.
    """
    return (row["requests"] - row["failures"]) / row["window_s"]


@dataclass(frozen=True)
class Starvation:
    """A measured timeout run read as uvloop serves it: some users answered at the cap, the others never."""

    users: int
    starved: int  # users never answered in the run
    gave_up_rps: float  # starved / timeout_s: each starved user gives up once per timeout
    goodput_rps: float  # requests answered per second (goodput)
    cap: float  # the blocked workers' req/s
    locust_rps: float  # requests ended per second, timeouts included: what Locust reports
    failure_rate: float  # the share of the ended requests that timed out, measured

    @property
    def expected_failure_rate(self) -> float:
        """The failures that split predicts: give-ups over give-ups and answers."""
        ended = self.gave_up_rps + self.goodput_rps
        return self.gave_up_rps / ended if ended else math.nan

    def frame(self) -> pd.DataFrame:
        """One row: who was never answered, the give-ups and answers per second, and the failures both ways."""
        return pd.DataFrame(
            {
                "users never answered": [f"{self.starved} of {self.users}"],
                "give-ups (req/s)": [self.gave_up_rps],
                "answered (req/s)": [self.goodput_rps],
                "cap (req/s)": [self.cap],
                "Locust's rps, timeouts included": [self.locust_rps],
                "failure rate from that split": [self.expected_failure_rate],
                "failure rate measured": [self.failure_rate],
            }
        )


def starvation(answered: Sequence[int], row: Mapping, timeout_s: float, cap: float) -> Starvation:
    """How a timeout run's failures split, from the requests each user got answered (`answered`) and its row.

    A user never answered gives up once per `timeout_s`; the others are answered at up to `cap`. So
    the failures per second are starved users / timeout, beside goodput answers per second.
    """
    positive("timeout_s", timeout_s, " s")
    starved = sum(1 for n in answered if n == 0)
    return Starvation(
        users=len(answered),
        starved=starved,
        gave_up_rps=starved / timeout_s,
        goodput_rps=goodput(row),
        cap=cap,
        locust_rps=row["rps"],
        failure_rate=row["failure_rate"],
    )


def history(outcomes: list[Outcome]) -> pd.DataFrame:
    """Requests answered and timed out in each second of a simulated run, like a measured run's history."""
    frame = pd.DataFrame([(int(o.ended), o.ok) for o in outcomes], columns=["second", "ok"])
    seconds = pd.RangeIndex(int(frame["second"].max()) + 1 if len(frame) else 0, name="second")
    counts = frame.groupby("second")["ok"].agg(answered="sum", rps="size").reindex(seconds, fill_value=0)
    counts["failures"] = counts["rps"] - counts["answered"]
    return counts.reset_index().astype(int)


def _check(users: int, service_s: float, timeout_s: float, duration_s: float, workers: int) -> None:
    whole("users", users, 1)
    whole("workers", workers, 1)
    for name, value in (("service_s", service_s), ("timeout_s", timeout_s), ("duration_s", duration_s)):
        positive(name, value, " s")
