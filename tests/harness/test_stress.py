"""Fifty runs ended the hard ways (an exception, a Ctrl-C, a SIGKILL of their owner) and nothing left behind.

Run by `make test-stress`; `make test` leaves it out (marker `stress`). Each run is tiny (2
users, loads of 2 s) and is ended at a random moment: during the server's start-up, mid-load,
while Locust stops, while the run is saved. Servers alternate between 1 and 2 uvicorn workers
(each with a process pool), Locust between 1 and 2 processes. After every run, nothing of it
may run and its port must be free: the owner is a separate process (see lab_owner.py), and
every process it starts carries a tag, so orphans are found too.
"""

from __future__ import annotations

import random
import time
from collections import Counter

import pytest
from lab_owner import Owner, describe, lab_processes, port_free, wait_for

RUNS = {"exception": 17, "interrupt": 17, "kill": 16}
CLEAN_S = 15.0  # hang guard: the clean-up takes a second or two; far longer means it is stuck
DELAY_S = (0.05, 4.0)  # when the run is ended, from the start of the round: start-up to saving


def _check(owner: Owner, port: int, everything: bool) -> list[str]:
    """What is left of the run once the clean-up had its time: processes still running, a port still held."""

    def clean() -> bool:
        left = lab_processes(owner.tag) if everything else owner.left()
        return not left and port_free(port)

    if wait_for(clean, CLEAN_S):
        return []
    left = describe(lab_processes(owner.tag) if everything else owner.left())
    return left + ([] if port_free(port) else [f"port {port} still in use"])


def _interrupted_in_place(end: str, runs: int, seed: int, tally: Counter, problems: list[str]) -> None:
    """`runs` rounds in one owner, each ended by `end`; checked while the owner lives on, as a kernel does."""
    owner = Owner({"end": end, "rounds": runs, "seed": seed, "delay_s": DELAY_S})
    try:
        assert owner.next()["event"] == "ready"
        for _ in range(runs):
            start = owner.next()
            ended = owner.next()
            assert ended["event"] == "ended", ended
            tally[ended["by"]] += 1
            tally["backstop fired"] += ended["fired"] - 1
            problems += [f"{end} round {start['round']}: {p}" for p in _check(owner, start["port"], everything=False)]
            owner.go_on()
    finally:
        problems += [f"{end} owner: {p}" for p in owner.close()]


def _killed(n: int, seed: int, tally: Counter, problems: list[str]) -> None:
    """One owner, SIGKILLed at a random moment of its run: its children must notice and go."""
    rng = random.Random(seed)
    owner = Owner({"end": "kill", "rounds": 1, "seed": seed, "workers": [1 + n % 2], "processes": [1 + n // 2 % 2]})
    try:
        assert owner.next()["event"] == "ready"
        start = owner.next()
        time.sleep(rng.uniform(*DELAY_S))
        owner.kill()
        tally["SIGKILL"] += 1
        problems += [f"kill {n}: {p}" for p in _check(owner, start["port"], everything=True)]
    finally:
        problems += [f"kill {n} owner: {p}" for p in owner.close()]


@pytest.mark.slow
@pytest.mark.stress
def test_fifty_interrupted_runs_leave_nothing(capsys):
    seed = random.randrange(1_000_000)
    tally: Counter[str] = Counter()
    problems: list[str] = []
    _interrupted_in_place("exception", RUNS["exception"], seed, tally, problems)
    _interrupted_in_place("interrupt", RUNS["interrupt"], seed + 1, tally, problems)
    for n in range(RUNS["kill"]):
        _killed(n, seed + 2 + n, tally, problems)

    ended = tally["Injected"] + tally["KeyboardInterrupt"] + tally["SIGKILL"]
    summary = (
        f"stress (seed {seed}): {ended} runs interrupted ({tally['Injected']} by an exception, "
        f"{tally['KeyboardInterrupt']} by KeyboardInterrupt, {tally['SIGKILL']} by SIGKILL of their owner); "
        f"{len(problems)} processes or ports left; the interrupting signal had to be sent again "
        f"{tally['backstop fired']} times"
    )
    with capsys.disabled():
        print("\n" + summary)
    assert ended == sum(RUNS.values()), summary
    assert not problems, summary + "\n" + "\n".join(problems)
