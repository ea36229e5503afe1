"""Every request Locust sent, as it wrote them (locustfiles/pattern.py), and the one reader of those files.

Each Locust process writes one records file (labserver/protocol.py: ProcessRecords, whose
records are laid out as protocol.Record), and a master one for each of its workers, on its own
clock, with the worker's CPU seconds. A measured run's folder keeps its own share of them as
plain per-user lists. Both are read here and nowhere else.
"""

from __future__ import annotations

import glob
import json
import math
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from labserver import protocol
from labserver.protocol import Record as Record

PerUser = list[list[Record]]


def read_json(path: Path | str, default: Any) -> Any:
    """A JSON file Locust wrote, or `default` if it is missing or was cut short (Locust killed mid-write)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def read_plan(folder: Path) -> tuple[float | None, dict[str, PerUser]]:
    """(when the test started, {file name: per-user records}) from every Locust process's file in `folder`."""
    t0, files = None, {}
    for path in _in_order(folder):
        data = protocol.ProcessRecords.read(path)
        if data is None:  # cut short, or not ours
            continue
        if data.t0 is not None:
            t0 = data.t0 if t0 is None else min(t0, data.t0)
        files[os.path.basename(path)] = data.users
    return t0, files


def worker_cpu(folder: Path | str) -> list[tuple[str, float, float]]:
    """Each Locust worker's (name, time, CPU seconds) readings, as its master wrote them; none for one process."""
    readings = []
    for path in _in_order(folder):
        data = protocol.ProcessRecords.read(path)
        if data is not None and data.cpu is not None:
            name = f"{data.host}:{data.pid}"  # two workers' pids may be equal on two machines
            readings += [(name, float(t), float(seconds)) for t, seconds in data.cpu]
    return readings


def _in_order(folder: Path | str) -> list[str]:
    """The records files of `folder` by their process number (records.2 before records.10)."""
    paths = glob.glob(str(Path(folder) / protocol.RECORDS_GLOB))
    return sorted(paths, key=lambda p: [int(s) if s.isdigit() else s for s in re.split(r"(\d+)", os.path.basename(p))])


def stage(files: dict[str, PerUser], number: int, users: int) -> dict[str, PerUser]:
    """Each file's records of one stage, for the users that stage used (protocol.stage_users: the first `users`)."""
    return {
        name: [[r for r in user if r.stage == number] for user in protocol.stage_users(per_user, users)]
        for name, per_user in files.items()
    }


def write(folder: Path, files: dict[str, PerUser]) -> None:
    """A run's share of the records, one file per Locust process, as plain per-user lists."""
    for name, per_user in files.items():
        with open(Path(folder) / name, "w") as f:
            json.dump(protocol.written(per_user), f)


def read(folder: Path | str) -> PerUser:
    """Every user's records of a measured run, from all of its files."""
    per_user: PerUser = []
    for path in _in_order(folder):
        per_user += protocol.parsed(read_json(path, []))
    return per_user


def counts(per_user: PerUser, since: float = -math.inf) -> dict[int, int]:
    """Requests per worker pid among the records that finished at or after `since` (no pid: skipped)."""
    seen = Counter(r.pid for records in per_user for r in records if r.end >= since and r.pid is not None)
    return dict(sorted(seen.items()))


def answers_per_user(folder: Path | str) -> pd.DataFrame:
    """Requests answered and failed for each Locust user of a measured run."""
    rows = []
    for user, records in enumerate(read(folder)):
        answered = sum(1 for r in records if r.ok)
        rows.append({"user": user, "answered": answered, "failed": len(records) - answered})
    return pd.DataFrame(rows, columns=["user", "answered", "failed"])


def bursts(per_user: PerUser, gap_ms: float = 5.0) -> pd.DataFrame:
    """Replies grouped in bursts: each burst's first reply (epoch s) and size, a new burst after `gap_ms` of silence.

    Users that move in step get their replies together, in bursts as large as the users; users
    spread over time get theirs one or two at a time.
    """
    ends = sorted(r.end for records in per_user for r in records if r.ok)
    rows: list[dict] = []
    for end in ends:
        if rows and (end - rows[-1]["last"]) * 1000 <= gap_ms:
            rows[-1]["last"] = end
            rows[-1]["size"] += 1
        else:
            rows.append({"first": end, "last": end, "size": 1})
    return pd.DataFrame(rows, columns=["first", "last", "size"])


def bunched(per_user: PerUser, window: tuple[float, float], gap_ms: float) -> tuple[float, float]:
    """How far the users moved in step: (the share of the window's replies that came within `gap_ms`
    of the one before, that share for as many replies spread at random over the window); NaN, NaN
    for fewer than three replies.

    Mean-value analysis takes requests to arrive at random. Users whose requests all wait the same
    time drift into step instead: replies that leave together come back together, and each request
    waits for the ones ahead of it in its bunch, so a run whose replies bunch far more than random
    ones reads short of the model (docs/evidence.md). Spread at random at rate X, a gap is shorter
    than g with probability 1 - exp(-X g).
    """
    first, last = window
    groups = bursts([[r for r in records if first <= r.end <= last] for records in per_user], gap_ms)
    replies = int(groups["size"].sum())
    if replies < 3:
        return math.nan, math.nan
    # every reply but a burst's first came within gap_ms of the one before
    close = (replies - len(groups)) / (replies - 1)
    mean_gap_ms = (groups["last"].max() - groups["first"].min()) * 1000 / (replies - 1)
    at_random = 1 - math.exp(-gap_ms / mean_gap_ms) if mean_gap_ms > 0 else 1.0
    return close, at_random
