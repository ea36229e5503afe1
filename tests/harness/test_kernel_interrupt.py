"""An instructor presses the kernel's stop button during a measurement cell, then runs the cell again.

Through a real Jupyter kernel, as JupyterLab does it (an interrupt request: SIGINT to the
kernel): the cell ends with KeyboardInterrupt, the run cut short is saved and marked so, nothing
it started is left running or listening, and the same cell then runs to the end at once. How
long the stop took is printed (the course's target is 2 s); a test must not depend on the
machine's speed, so it is not asserted.
"""

from __future__ import annotations

import json
import time

import pytest
from lab_owner import describe, lab_kernel, lab_processes, wait_for

CLEAN_S = 15.0  # hang guard for a clean-up that takes a second or two
LESSON = "test_kernel_interrupt"

CELL = """
from labserver import LabServer, sweep
with LabServer() as server:
    print("port", server.port, flush=True)
    runs = sweep(server, ["sequential"], [5], io_ms=50, duration_s={duration}, lesson="{lesson}")
print("statuses", list(runs["status"]))
"""


def _execute(kc, code: str, timeout: float) -> tuple[dict, str]:
    """Run `code` in the kernel; its reply and everything it printed."""
    msg_id = kc.execute(code)
    printed = []
    deadline = time.monotonic() + timeout
    while True:
        msg = kc.get_iopub_msg(timeout=max(1.0, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    return kc.get_shell_msg(timeout=timeout)["content"], "".join(printed)


def _measuring(tag: str, kernel_pid: int) -> list:
    """What the cell started: servers, their pools, Locust (the kernel's own guard lives as long as the kernel)."""
    return [p for p in lab_processes(tag, exclude={kernel_pid}) if "labserver.harness.processes.guard" not in _words(p)]


def _words(p) -> str:
    try:
        return " ".join(p.cmdline())
    except Exception:  # gone meanwhile
        return ""


def _manifests(data_dir) -> list[dict]:
    found = []
    for path in (data_dir / "runs").glob("*/manifest.json"):
        manifest = json.loads(path.read_text())
        if manifest.get("lesson") == LESSON:
            found.append(manifest)
    return found


@pytest.mark.slow
def test_the_stop_button_ends_a_measurement_keeps_it_marked_and_the_cell_runs_again(data_dir):
    with lab_kernel() as (tag, km, kc):
        kernel_pid = km.provisioner.pid
        msg_id = kc.execute(CELL.format(duration=60, lesson=LESSON))

        def measuring() -> bool:
            words = " ".join(_words(p) for p in _measuring(tag, kernel_pid))
            return "uvicorn" in words and "locust" in words

        assert wait_for(measuring, 90), "the measurement never started"
        time.sleep(2.0)  # into the run: some requests measured
        pressed = time.monotonic()
        km.interrupt_kernel()  # JupyterLab's stop button
        while True:
            reply = kc.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        stopped_s = time.monotonic() - pressed
        print(f"the cell stopped {stopped_s:.2f} s after the interrupt")
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        assert wait_for(lambda: not _measuring(tag, kernel_pid), CLEAN_S), describe(_measuring(tag, kernel_pid))
        cut = _manifests(data_dir)
        assert [m["status"] for m in cut] == ["interrupted"] and not cut[0]["valid"]

        # The same cell again, shorter: it runs at once, to the end, on a free port.
        again, printed = _execute(kc, CELL.format(duration=3, lesson=LESSON), timeout=120)
        assert again["status"] == "ok", again
        assert "statuses ['ok']" in printed
        assert sorted(m["status"] for m in _manifests(data_dir)) == ["interrupted", "ok"]
        assert wait_for(lambda: not _measuring(tag, kernel_pid), CLEAN_S), describe(_measuring(tag, kernel_pid))
