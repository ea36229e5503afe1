"""What the lab and its Locust processes agree on: the plan, the records, the files, the events.

The harness writes a plan into a run's folder and reads what Locust leaves there; the
locustfile (locustfiles/pattern.py) reads the plan and writes the rest. Both import this module,
so that neither keeps its own copy of a format. The locustfile runs in Locust's process, which
gevent patches: this module imports the standard library only (a contract in pyproject.toml),
and `import labserver` costs little there (labserver/__init__.py imports its names on first use).
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import json
import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, NotRequired, TypedDict, TypeVar

# A plan's files, in its first run's folder (Locust's own start with "locust": locust.log, its CSVs)
PLAN_FILE = "plan.json"  # the stages, for --plan-file
LOG_FILE = "locust.log"  # Locust's output: for a human when something fails, never read for its state
EVENTS_FILE = "locust.events.jsonl"  # what Locust did, as it happened (--events-file)
RECORDS = "records"  # --records-file: records.<pid>.json per process, records.w<index>.json per worker
LIVE = "live"  # --live-file: live.<pid>.bin per process, live.w<index>.bin per worker


def records_path(prefix: str, process: int | str) -> str:
    """A Locust process's records file: `process` is its pid, or worker(index) for a master's copy of a worker's."""
    return f"{prefix}.{process}.json"


def live_path(prefix: str, process: int | str) -> str:
    """A Locust process's live file, named as records_path names its records."""
    return f"{prefix}.{process}.bin"


def worker(index: int) -> str:
    """How a master names the files it writes for its worker `index`."""
    return f"w{index}"


RECORDS_GLOB = records_path(RECORDS, "*")
LIVE_GLOB = live_path(LIVE, "*")


def from_worker(name: str) -> bool:
    """Whether a records file's name is a master's copy of a worker's."""
    return name.startswith(f"{RECORDS}.w")


# The stages: what the harness writes of each, for the locustfile to read (and `host`, its server's URL)
STAGE_KEYS = ("pattern", "users", "tasks", "io_ms", "cpu_n", "duration_s", "rate", "drain_s")


class Route(TypedDict):
    """A route of an app the lab did not write (`python -m labserver measure`): what each request of a stage sends."""

    method: str  # GET, POST, ...
    path: str  # with its query: /items?limit=20
    label: str  # how runs and reports name it: "GET /items?limit=20"
    body: NotRequired[str]  # the request's body, as sent
    headers: NotRequired[dict[str, str]]


class PlanStage(TypedDict):
    """One stage of a plan, as the harness writes it (STAGE_KEYS, and `host`) and the locustfile reads it.

    A lone Locust process without --plan-file runs one stage of its command line's options: it has
    no rate, no drain and no host of its own (Locust's --host), so those three may be missing.
    """

    pattern: str
    users: int  # a stage uses the first `users` users of each Locust process (admitted)
    tasks: int
    io_ms: int
    cpu_n: int
    duration_s: float
    rate: NotRequired[float]  # an open loop's arrivals a second; missing or 0: a closed loop
    drain_s: NotRequired[float]  # an open loop's last seconds, with no new arrival
    host: NotRequired[str]  # the server's URL: requests go there, not to Locust's --host
    route: NotRequired[Route]  # an app of one's own: the route its requests send; missing: the pattern's endpoint


def write_plan(path: str | os.PathLike[str], stages: list[PlanStage]) -> None:
    with open(path, "w") as f:
        json.dump(stages, f)


def read_plan(path: str | os.PathLike[str]) -> list[PlanStage]:
    with open(path) as f:
        return json.load(f)


def admitted(user_index: int, stage_users: int) -> bool:
    """Whether a Locust process's user `user_index` (0: the first it started) takes part in a stage of `stage_users`.

    A stage uses the first `stage_users` users of each process, and the rest wait for a stage that
    needs them: the locustfile admits its users by this rule, and the harness keeps their records
    by the same one (stage_users).
    """
    return user_index < stage_users


T = TypeVar("T")


def stage_users(per_user: list[T], users: int) -> list[T]:
    """Of one process's per-user lists (in the order its users started), those of the users a stage of `users` used."""
    return per_user[:users]


def ends(durations: Iterable[float]) -> list[float]:
    """When each stage ends, in seconds after the plan began."""
    return list(itertools.accumulate(durations))


def stage_at(stage_ends: Sequence[float], elapsed_s: float) -> int | None:
    """The index of the stage running `elapsed_s` s into the plan (the first before it starts); None once it is over."""
    i = bisect.bisect_right(stage_ends, elapsed_s)
    return i if i < len(stage_ends) else None


def request_path(stage: PlanStage) -> str:
    """The URL a stage's requests get: absolute when the stage names its server, so that a plan can take turns."""
    route = stage.get("route")
    if route is not None:
        return stage.get("host", "") + route["path"]
    query = f"/{stage['pattern']}?tasks={stage['tasks']}&io_ms={stage['io_ms']}&cpu_n={stage['cpu_n']}"
    return stage.get("host", "") + query


def answered(status: int) -> bool:
    """Whether a reply counts as served: any 2xx (an app's POST answers 201), never a shed 503."""
    return 200 <= status < 300


class Record(NamedTuple):
    """One request, as the user that sent it recorded it."""

    end: float  # when the reply (or the failure) came, in seconds since the epoch
    ms: float  # latency in ms, measured by the user that sent it
    ok: bool
    pid: int | None = None  # the worker that answered (X-Worker-Pid), None when no reply came
    stage: int = 0  # the stage of its plan in which it was sent
    intended: float | None = None  # open loop: when its schedule meant to send it (None: a closed loop's)

    @property
    def sent(self) -> float:
        return self.end - self.ms / 1000

    @property
    def from_intended_ms(self) -> float:
        """Latency from when it should have left (an open loop's, corrected for a late send), in ms."""
        return self.ms if self.intended is None else (self.end - self.intended) * 1000


def record(end: float, ms: float, ok: bool, pid: int | None, stage: int, intended: float | None = None) -> Record:
    """One request's record, as the user that sent it keeps it (`intended`: an open loop's only)."""
    return Record(end, ms, ok, pid, stage, intended)


def shifted(r: Sequence[Any], by: float) -> Record:
    """A record moved `by` seconds (a worker's onto its master's clock): both its times move, the rest stays.

    `r` is a Record or a record as written (five fields, or six: written).
    """
    intended = r[5] + by if len(r) > 5 and r[5] is not None else None
    return Record(r[0] + by, r[1], r[2], r[3], r[4], intended)


# A record as files and messages carry it: a closed loop's without its `intended` (no `null` on every
# one of them), an open loop's with all six fields (JSON and msgpack write a Record as a list)
WrittenRecord = tuple[float, float, bool, int | None, int] | Record


def written(per_user: list[list[Record]]) -> list[list[WrittenRecord]]:
    """Every user's records as written: five fields, and a sixth (`intended`) for an open loop's request only."""
    return [[r if r.intended is not None else r[:5] for r in user] for user in per_user]


def parsed(per_user: list[list[Sequence[Any]]]) -> list[list[Record]]:
    """Every user's records as written (or shorter: a missing pid is None, a missing stage 0), as Records."""
    return [[Record(*r) for r in user] for user in per_user]


@dataclass(frozen=True)
class ProcessRecords:
    """What one Locust process's records file holds: its start, and one list of records per user.

    A master writes its own (with no users) and one for each of its workers, on its own clock,
    with what the worker reported of itself: `cpu` ([time, CPU seconds] pairs), `host`, `pid`.
    """

    t0: float | None  # when the process's test started (epoch s): None if it never did
    users: list[list[Record]]  # in the order the users started
    cpu: Sequence[Sequence[float]] | None = None
    host: str | None = None
    pid: int | None = None

    def write(self, path: str | os.PathLike[str]) -> None:
        data: dict[str, Any] = {"t0": self.t0, "users": written(self.users)}
        data |= {k: getattr(self, k) for k in ("cpu", "host", "pid") if getattr(self, k) is not None}
        with open(path, "w") as f:
            json.dump(data, f)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> ProcessRecords | None:
        """The file at `path`; None if it is missing, was cut short (Locust killed mid-write) or is not one."""
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or "users" not in data:
            return None
        return cls(data.get("t0"), parsed(data["users"]), data.get("cpu"), data.get("host"), data.get("pid"))


# The live files: fixed-size binary records, appended once a second in one write. A record costs
# Locust's process one struct.pack and the harness its share of one bulk numpy read, where a text
# line costs a format and a parse (docs/evidence.md). A file's first record is its head (`stage`
# LIVE_HEAD, `end` when the process's test started: t0), then one per request on the head's clock.
# The harness builds its numpy dtype from LIVE_FIELDS: (name, struct code) each.
LIVE_FIELDS = (("end", "d"), ("ms", "f"), ("ok", "?"), ("stage", "h"))
LIVE_RECORD = struct.Struct("<" + "".join(code for _, code in LIVE_FIELDS))  # little-endian, unpadded
LIVE_HEAD = -1  # the head record's `stage`


def live_head(t0: float) -> bytes:
    """A live file's first record: when its process's test started."""
    return LIVE_RECORD.pack(t0, 0.0, False, LIVE_HEAD)


def live_records(new: Iterable[Record], shift: float = 0.0) -> bytes:
    """The live records of `new` records (Record's fields): (end, ms, ok, stage) each.

    `shift` moves a worker's times onto its master's clock.
    """
    pack = LIVE_RECORD.pack
    return b"".join([pack(r[0] + shift, r[1], r[2], r[4]) for r in new])


def live_shifted(data: bytes, shift: float) -> bytes:
    """Live records moved `shift` seconds (a worker's, onto its master's clock)."""
    if not shift:
        return data
    pack = LIVE_RECORD.pack
    return b"".join([pack(end + shift, ms, ok, stage) for end, ms, ok, stage in LIVE_RECORD.iter_unpack(data)])


# Locust's state, as the locustfile's events say it (EVENTS_FILE, one JSON object a line)
STARTED = "started"  # the test started: the plan's clock (`t0`) runs from here
STAGE = "stage"  # a stage of the plan began (`index`)
JOINED = "joined"  # a master: a worker joined (`workers` of `expected`)
GAVE_UP = "gave_up"  # a master: too few workers joined in time (`workers` came); Locust quits
CPU_WARNING = "cpu_warning"  # a Locust process passed 90% of a core (`worker`: its index; None, the master's own)
# Locust's own messages between a master and its workers
PLAN_MESSAGE = "lab_plan"  # master to worker: the stages, the timeout, whether to stream (live)
LIVE_MESSAGE = "lab_live"  # worker to master: its new requests, once a second
RECORDS_MESSAGE = "lab_records"  # worker to master: every record and its CPU seconds, at the end
CPU_MESSAGE = "lab_cpu_warning"  # worker to master: Locust warned of its CPU


class WorkerPlan(TypedDict):
    """PLAN_MESSAGE: what a master sends each worker as its test starts."""

    stages: list[PlanStage]
    timeout_s: float  # a request's client timeout
    live: bool  # whether the worker sends its new requests once a second (LIVE_MESSAGE)


class LiveBatch(TypedDict):
    """LIVE_MESSAGE: a worker's requests since its last batch, for its master's live file."""

    index: int  # the worker's (Locust's worker_index)
    t0: float  # when the worker's test started, on its clock: the master moves the records onto its own
    records: bytes  # live records (live_records), on the worker's clock


class WorkerRecords(TypedDict):
    """RECORDS_MESSAGE: a worker's records and CPU seconds, sent once as its test stops."""

    index: int  # the worker's (Locust's worker_index)
    t0: float  # when the worker's test started, on its clock
    users: list[list[WrittenRecord]]  # per user, as written (msgpack brings each record as a list)
    cpu: Sequence[Sequence[float]]  # (time, CPU seconds) pairs, on the worker's clock
    host: str  # the worker's machine: two workers' pids may be equal on two machines
    pid: int


def event(kind: str, at: float, **fields: Any) -> str:
    """One line of the events file."""
    return json.dumps({"event": kind, "at": at, **fields}) + "\n"


@dataclass(frozen=True)
class LocustState:
    """What a plan's Locust processes have said so far."""

    started: bool = False
    stage: int | None = None  # the stage begun last
    joined: int = 0  # the workers that joined a master
    gave_up: bool = False
    cpu_warning: bool = False

    def said(self, e: dict) -> LocustState:
        """This state once event `e` has happened."""
        kind, replace = e.get("event"), dataclasses.replace
        if kind == STARTED:
            return replace(self, started=True)
        if kind == STAGE:
            return replace(self, stage=int(e["index"]))
        if kind == JOINED:
            return replace(self, joined=int(e["workers"]))
        if kind == GAVE_UP:
            return replace(self, gave_up=True, joined=int(e["workers"]))
        if kind == CPU_WARNING:
            return replace(self, cpu_warning=True)
        return self


class Events:
    """The events file at `path`, read as it grows: `state()` reads only what was added since it last did."""

    def __init__(self, path: str | os.PathLike):
        self.path, self.offset, self.partial = path, 0, b""
        self.now = LocustState()

    def state(self) -> LocustState:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return self.now  # not written yet
        self.offset += len(data)
        complete, _, self.partial = (self.partial + data).rpartition(b"\n")
        for line in complete.splitlines():
            try:
                self.now = self.now.said(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # not an event of ours
        return self.now
