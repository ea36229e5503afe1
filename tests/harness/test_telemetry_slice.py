"""A run's share of its server's telemetry: the samples of its window, on the clock of its history."""

import json
import math
import threading
from types import SimpleNamespace

import pandas as pd
import pytest

from labserver.demo.telemetry import FIELDS
from labserver.harness.rows import telemetry

T0 = 1_700_000_000.0


def sample(t, busy=1, lag_ms=0.5):
    return {
        "t": t,
        "in_flight": busy + 2,
        "threads_busy": busy,
        "threads_waiting": 2,
        "pool_running": 0,
        "pool_queued": 0,
        "loop_lag_ms": lag_ms,
    }


def write(folder, pid, samples, tail=""):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{pid}.jsonl", "a") as f:
        f.write("".join(json.dumps(s) + "\n" for s in samples) + tail)


@pytest.fixture
def server(tmp_path):
    """A stopped stand-in server whose two workers sampled T0 … T0 + 3 s every 100 ms."""
    folder = tmp_path / "server" / "telemetry"
    for pid, busy in ((101, 1), (202, 5)):
        write(folder, pid, [sample(T0 + k / 10, busy) for k in range(31)])
    return SimpleNamespace(telemetry_dir=folder, alive=False)


@pytest.fixture
def run_folder(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    return folder


def test_a_run_keeps_the_samples_of_its_window_from_every_worker(server, run_folder):
    path = telemetry.save(run_folder, server, start=T0 - 0.5, window=(T0 + 1.0, T0 + 2.0))
    assert path == run_folder / telemetry.FILE
    frame = pd.read_csv(path)
    assert list(frame.columns) == ["second", "pid", *FIELDS]
    assert frame["t"].between(T0 + 1.0, T0 + 2.0).all()
    assert frame.groupby("pid").size().to_dict() == {101: 11, 202: 11}  # both ends of the window count
    assert frame["second"].tolist() == pytest.approx((frame["t"] - (T0 - 0.5)).tolist())  # history.csv's clock
    assert frame["t"].is_monotonic_increasing
    assert frame.loc[frame["pid"] == 202, "threads_busy"].eq(5).all()


def test_load_reads_a_run_back_by_folder_by_result_and_by_id(server, run_folder, tmp_path, monkeypatch):
    telemetry.save(run_folder, server, start=T0, window=(T0, T0 + 0.45))
    by_folder = telemetry.load(run_folder)
    assert len(by_folder) == 10  # 5 samples × 2 workers
    pd.testing.assert_frame_equal(telemetry.load(SimpleNamespace(path=run_folder)), by_folder)
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "data"))
    published = tmp_path / "data" / "runs" / "run-7"
    published.mkdir(parents=True)
    (published / telemetry.FILE).write_bytes((run_folder / telemetry.FILE).read_bytes())
    pd.testing.assert_frame_equal(telemetry.load("run-7"), by_folder)


def test_a_run_without_telemetry_loads_as_an_empty_frame_with_the_columns(run_folder):
    frame = telemetry.load(run_folder)
    assert frame.empty and list(frame.columns) == telemetry.COLUMNS


@pytest.mark.parametrize(
    "case",
    ["no folder", "stand-in server", "nan window", "window outside the samples"],
)
def test_nothing_to_keep_writes_no_file(server, run_folder, case):
    window = (T0 + 1, T0 + 2)
    if case == "no folder":
        server = SimpleNamespace(telemetry_dir=None, alive=False)
    elif case == "stand-in server":
        server = SimpleNamespace(settings=None)  # collect's tests pass such servers
    elif case == "nan window":
        window = (math.nan, math.nan)
    else:
        window = (T0 + 10, T0 + 11)
    assert telemetry.save(run_folder, server, start=T0, window=window) is None
    assert not (run_folder / telemetry.FILE).exists()


def test_a_line_cut_short_by_a_killed_worker_is_left_out(server, run_folder):
    write(server.telemetry_dir, 101, [], tail='{"t": 17000')
    telemetry.save(run_folder, server, start=T0, window=(T0, T0 + 5))
    assert len(pd.read_csv(run_folder / telemetry.FILE)) == 62


def test_a_running_server_s_last_samples_are_waited_for(server, run_folder):
    server.alive = True  # its workers still hold the window's last samples in memory
    late = threading.Timer(0.3, lambda: [write(server.telemetry_dir, pid, [sample(T0 + 4)]) for pid in (101, 202)])
    late.start()
    try:
        telemetry.save(run_folder, server, start=T0, window=(T0 + 3.5, T0 + 4.0), wait_s=30)
    finally:
        late.cancel()
    assert len(pd.read_csv(run_folder / telemetry.FILE)) == 2


def test_the_wait_is_bounded(server, run_folder):
    server.alive = True  # a server that never writes again: the run keeps what there is
    telemetry.save(run_folder, server, start=T0, window=(T0 + 2.95, T0 + 4.0), wait_s=0.2)
    assert len(pd.read_csv(run_folder / telemetry.FILE)) == 2


def test_an_unreadable_folder_is_a_warning_not_a_lost_run(server, run_folder, monkeypatch):
    def broken(folder):
        raise OSError("disk gone")

    monkeypatch.setattr(telemetry, "read", broken)
    with pytest.warns(UserWarning, match="no telemetry saved in run: disk gone"):
        assert telemetry.save(run_folder, server, start=T0, window=(T0, T0 + 1)) is None


# --- the connection hold of lesson 07's database routes: a window's change of running totals


def held(t, pid, held_s, uses):
    return {**sample(t), "pid": pid, "db_held_s": held_s, "db_uses": uses}


def test_a_window_s_hold_is_its_seconds_held_over_its_uses_summed_over_the_workers():
    samples = [
        held(T0, 101, 10.0, 100),
        held(T0 + 0.1, 101, 12.0, 120),
        held(T0 + 0.2, 101, 14.2, 140),  # 101: 4.2 s over 40 uses
        held(T0, 202, 0.0, 0),
        held(T0 + 0.2, 202, 1.8, 20),  # 202: 1.8 s over 20
    ]
    assert telemetry.hold_ms(samples) == pytest.approx(6.0 / 60 * 1000)  # not the mean of 105 and 90 ms


def test_a_window_without_a_use_or_without_the_database_has_no_hold():
    assert math.isnan(telemetry.hold_ms([held(T0, 101, 1.0, 10), held(T0 + 1, 101, 1.0, 10)]))
    assert math.isnan(telemetry.hold_ms([sample(T0) | {"pid": 101}, sample(T0 + 1) | {"pid": 101}]))
    assert math.isnan(telemetry.hold_ms([held(T0, 101, 1.0, 10)]))  # one sample: no change to read
    nulls = [{**s, "db_held_s": None, "db_uses": None} for s in (held(T0, 1, 0, 0), held(T0 + 1, 1, 0, 0))]
    assert math.isnan(telemetry.hold_ms(nulls))  # a worker without the database routes samples nulls


def test_the_hold_is_cut_to_the_run_s_window(tmp_path):
    # one worker, 20 uses a second: 100 ms each for 5 s, then 110 ms each
    folder = tmp_path / "telemetry"
    ticks = [T0 + k / 10 for k in range(101)]
    write(
        folder,
        101,
        [held(t, 101, 2.0 * min(t - T0, 5) + 2.2 * max(t - T0 - 5, 0), round(20 * (t - T0))) for t in ticks],
    )
    server = SimpleNamespace(telemetry_dir=folder, alive=False)
    assert telemetry.db_hold_ms(server, (T0 + 1, T0 + 4)) == pytest.approx(100.0)
    assert telemetry.db_hold_ms(server, (T0 + 6, T0 + 9.5)) == pytest.approx(110.0)
    assert math.isnan(telemetry.db_hold_ms(server, (math.nan, math.nan)))
    assert math.isnan(telemetry.db_hold_ms(SimpleNamespace(settings=None), (T0, T0 + 1)))  # no telemetry


def test_the_file_of_a_run_keeps_the_hold_s_totals_and_leaves_them_empty_without_a_database(server, run_folder):
    write(server.telemetry_dir, 303, [held(T0 + k / 10, 303, k * 0.1, k) for k in range(31)])
    frame = pd.read_csv(telemetry.save(run_folder, server, start=T0, window=(T0 + 1.0, T0 + 2.0)))
    assert frame.loc[frame["pid"] == 303, "db_uses"].tolist() == list(range(10, 21))
    assert frame.loc[frame["pid"] != 303, ["db_held_s", "db_uses"]].isna().all().all()
