"""A real server's telemetry reaches the run folder (slow: starts uvicorn and Locust)."""

import pytest

from labserver.harness.load.run import run_load
from labserver.harness.rows import telemetry
from labserver.harness.servers.launcher import LabServer


@pytest.mark.slow
def test_a_thread_pool_run_keeps_its_borrowed_threads_in_its_folder():
    # 12 users on 4 threads, 100 ms each: the 4 threads are borrowed all the time, the rest wait
    with LabServer(threads=4, procs=0) as server:
        folder = server.telemetry_dir
        result = run_load(server, "threadpool", users=12, io_ms=100, duration_s=3, lesson="tests-telemetry")
        assert folder is not None and list(folder.glob("*.jsonl"))  # one file per worker, while it runs
    assert not folder.exists()  # the server's copy goes with it; the run keeps its share
    frame = telemetry.load(result)
    assert not frame.empty and (result.path / telemetry.FILE).exists()
    assert frame["threads_busy"].max() > 0
    assert frame["threads_busy"].max() <= 4
    assert frame["threads_waiting"].max() > 0
    assert frame["t"].between(result.row["window_start"], result.row["window_start"] + result.row["window_s"]).all()
    assert set(frame["pid"]) == set(result.row["worker_requests"])  # the worker that answered sampled


@pytest.mark.slow
def test_a_server_without_telemetry_leaves_none():
    with LabServer(procs=0, telemetry=False) as server:
        assert server.telemetry_dir is None
        assert server.info()["threads_busy"] == 0
