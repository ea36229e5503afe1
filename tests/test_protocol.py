"""What the harness and the locustfile agree on (labserver/protocol.py): each format written one way, read the other."""

import json
import subprocess
import sys
import typing
from pathlib import Path
from types import SimpleNamespace

import pytest

from labserver import protocol
from labserver.harness.plans.plan import Stage, stage_at
from labserver.paths import LOCUSTFILES
from labserver.protocol import Events, LocustState, ProcessRecords, Record

HEAVY = ("pandas", "numpy", "matplotlib", "seaborn", "labserver.harness.load.run", "labserver.theory")


def test_the_locustfile_imports_the_protocol_without_the_harness_or_pandas():
    # Locust's process, as Locust loads the locustfile: its folder first on the path
    code = f"""
import importlib.util, json, sys
sys.path.insert(0, {str(LOCUSTFILES)!r})
spec = importlib.util.spec_from_file_location("pattern", {str(LOCUSTFILES / "pattern.py")!r})
spec.loader.exec_module(importlib.util.module_from_spec(spec))
print(json.dumps(sorted(sys.modules)))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert "labserver.protocol" in loaded and "gevent" in loaded  # the test can see what it claims
    assert not [m for m in loaded if m.startswith(HEAVY)], sorted(m for m in loaded if m.startswith(HEAVY))


def test_the_protocol_alone_imports_the_standard_library_only():
    code = (
        "import sys, labserver; before = set(sys.modules); import labserver.protocol; print(*set(sys.modules) - before)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60)
    new = set(out.stdout.split())
    assert "labserver.protocol" in new
    assert {m for m in new - {"labserver.protocol"} if m.split(".")[0] not in sys.stdlib_module_names} == set()


def test_a_plan_stage_is_typed_with_the_keys_the_harness_writes():
    assert list(typing.get_type_hints(protocol.PlanStage)) == [*protocol.STAGE_KEYS, "host", "route"]


def test_a_route_of_ones_own_is_requested_as_given_and_any_2xx_counts():
    stage = protocol.PlanStage(pattern="sequential", users=1, tasks=1, io_ms=0, cpu_n=0, duration_s=1)
    stage["host"] = "http://127.0.0.1:9000"
    stage["route"] = protocol.Route(method="POST", path="/orders?x=1", label="POST /orders?x=1", body="{}")
    assert protocol.request_path(stage) == "http://127.0.0.1:9000/orders?x=1"
    assert [protocol.answered(s) for s in (200, 201, 204, 301, 404, 503)] == [True, True, True, False, False, False]


def test_the_harness_writes_every_stage_key_the_locustfile_reads(tmp_path):
    server = SimpleNamespace(url="http://127.0.0.1:8000")
    stages = [Stage.from_run({"pattern": "gather", "users": 3, "io_ms": 10}, 5, server).locust()]
    protocol.write_plan(tmp_path / protocol.PLAN_FILE, stages)
    (read,) = protocol.read_plan(tmp_path / protocol.PLAN_FILE)
    assert set(protocol.STAGE_KEYS) <= set(read) and read["host"] == server.url
    assert protocol.request_path(read) == "http://127.0.0.1:8000/gather?tasks=1&io_ms=10&cpu_n=0"


def test_the_locustfile_admits_the_users_whose_records_the_harness_keeps():
    for users_in_process in range(5):
        per_user = [f"user {i}" for i in range(users_in_process)]
        for stage_users in range(7):
            kept = protocol.stage_users(per_user, stage_users)
            assert kept == [u for i, u in enumerate(per_user) if protocol.admitted(i, stage_users)]
    assert protocol.admitted(0, 1) and not protocol.admitted(1, 1)  # the first `users` of each process
    assert protocol.stage_users(["a", "b", "c"], 2) == ["a", "b"]


def test_the_lab_keeps_each_stage_s_start_and_path_and_leaves_the_plan_as_written():
    stages = [
        {"pattern": "gather", "users": 2, "tasks": 3, "io_ms": 10, "cpu_n": 0, "duration_s": 5, "host": "http://h:1"},
        {"pattern": "sequential", "users": 4, "tasks": 1, "io_ms": 0, "cpu_n": 20, "duration_s": 3},
    ]
    # in a process of its own: the locustfile's modules import Locust, which patches the process with gevent
    code = f"""
import json, sys
sys.path.insert(0, {str(LOCUSTFILES)!r})
from lab_plan import Lab
lab, stages = Lab(), {stages!r}
ends = lab.start(stages)
print(json.dumps({{"ends": ends, "starts": lab.starts, "paths": lab.paths, "stages": stages}}))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen["stages"] == stages  # no key added to the harness's stages
    assert (seen["ends"], seen["starts"]) == (8, [0.0, 5])
    assert seen["paths"] == ["http://h:1/gather?tasks=3&io_ms=10&cpu_n=0", "/sequential?tasks=1&io_ms=0&cpu_n=20"]


@pytest.mark.parametrize(
    ("elapsed_s", "locust", "harness"), [(-1, 0, 0), (0, 0, 0), (4.9, 0, 0), (5, 1, 1), (7.9, 1, 1), (8, None, 1)]
)
def test_both_sides_find_the_same_stage(elapsed_s, locust, harness):
    durations = [5, 3]
    assert protocol.stage_at(protocol.ends(durations), elapsed_s) == locust  # None: the plan is over
    assert stage_at([SimpleNamespace(duration_s=d) for d in durations], elapsed_s) == harness  # the last, after


def test_a_record_is_written_with_five_fields_or_six_and_read_as_a_record():
    closed, opened = protocol.record(10.0, 5.0, True, 7, 1), protocol.record(10.0, 5.0, True, 7, 1, 9.99)
    assert type(closed) is Record and closed.intended is None and opened.from_intended_ms == pytest.approx(10.0)
    (written,) = protocol.written([[closed, opened]])
    assert [len(r) for r in written] == [5, 6]  # no `null` on every closed loop's record
    assert json.dumps(written) == "[[10.0, 5.0, true, 7, 1], [10.0, 5.0, true, 7, 1, 9.99]]"
    assert protocol.parsed([written]) == [[closed, opened]] and type(protocol.parsed([written])[0][0]) is Record
    assert protocol.shifted(opened, 2.0) == Record(12.0, 5.0, True, 7, 1, 11.99)  # both times move, the latency stays
    assert protocol.shifted(closed, 2.0) == Record(12.0, 5.0, True, 7, 1)
    assert protocol.shifted(list(written[0]), 2.0) == Record(12.0, 5.0, True, 7, 1)  # as a worker's message brings it


def test_a_process_records_file_round_trips_and_a_cut_one_is_none(tmp_path):
    path = Path(protocol.records_path(str(tmp_path / protocol.RECORDS), 42))
    users = [[protocol.record(10.0, 5.0, True, 7, 0)], []]
    ProcessRecords(100.0, users).write(path)
    # a lone process's: no worker fields, and its records as written
    assert path.read_text() == '{"t0": 100.0, "users": [[[10.0, 5.0, true, 7, 0]], []]}'
    assert ProcessRecords.read(path) == ProcessRecords(100.0, users)
    worker = Path(protocol.records_path(str(tmp_path / protocol.RECORDS), protocol.worker(3)))
    ProcessRecords(100.0, users, [[100.0, 0.5]], "laptop", 11).write(worker)
    assert ProcessRecords.read(worker).cpu == [[100.0, 0.5]] and protocol.from_worker(worker.name)
    path.write_text('{"t0": 1.0, "users": [[[1.0, 5')  # Locust killed mid-write
    assert ProcessRecords.read(path) is None and ProcessRecords.read(tmp_path / "none.json") is None
    path.write_text("[[[1.0, 5.0, true]]]")  # a run's share: plain lists, not a process's file
    assert ProcessRecords.read(path) is None
    assert sorted(p.name for p in tmp_path.glob(protocol.RECORDS_GLOB)) == ["records.42.json", "records.w3.json"]


def test_live_records_read_back_as_written_and_a_worker_s_move_onto_its_master_s_clock():
    head, closed, opened = protocol.live_head(1000.0), (1001.5, 10.25, True, 42, 2), (1002.0, 7.5, False, None, 3, 1.9)
    data = protocol.live_records([closed, opened])
    assert len(head) == protocol.LIVE_RECORD.size and len(data) == 2 * protocol.LIVE_RECORD.size  # fixed size
    assert list(protocol.LIVE_RECORD.iter_unpack(head + data)) == [
        (1000.0, 0.0, False, protocol.LIVE_HEAD),
        (1001.5, 10.25, True, 2),  # (end, ms, ok, stage): the live view needs no pid, no intended time
        (1002.0, 7.5, False, 3),
    ]
    assert protocol.live_shifted(data, 0.5) == protocol.live_records([closed, opened], shift=0.5)
    assert protocol.live_shifted(data, 0.0) is data and protocol.live_records([]) == b""
    assert protocol.live_path(protocol.LIVE, protocol.worker(0)) == "live.w0.bin"


def test_events_are_read_as_they_grow_into_locusts_state(tmp_path):
    path = tmp_path / protocol.EVENTS_FILE
    events = Events(path)
    assert events.state() == LocustState()  # no file yet
    lines = [
        protocol.event(protocol.JOINED, 1.0, workers=1),
        protocol.event(protocol.JOINED, 2.0, workers=2),
        protocol.event(protocol.STARTED, 3.0, t0=3.0),
        protocol.event(protocol.STAGE, 3.0, index=0),
        "not an event\n",
        protocol.event("a later kind", 4.0),
    ]
    text = "".join(lines)
    path.write_text(text[:-10])  # the last line still being written
    assert events.state() == LocustState(started=True, stage=0, joined=2)
    with open(path, "a") as f:
        f.write(text[-10:] + protocol.event(protocol.CPU_WARNING, 5.0, worker=1))
    assert events.state() == LocustState(started=True, stage=0, joined=2, cpu_warning=True)
    gave_up = tmp_path / "gave_up.jsonl"
    gave_up.write_text(
        protocol.event(protocol.JOINED, 1.0, workers=1) + protocol.event(protocol.GAVE_UP, 9.0, workers=1)
    )
    assert Events(gave_up).state() == LocustState(joined=1, gave_up=True)
