"""In a notebook's kernel, a plan shows one live chart that each frame replaces, and no text bar (slow);
`make figures` gives its lessons the same view, a frame a second."""

import os

import pytest

from labserver.course import batch
from labserver.harness.plans import feed


def test_make_figures_draws_a_frame_a_second(monkeypatch, tmp_path):
    # the batch sets variables for its lessons' kernels: here in a copy of the environment, dropped after
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items() if k != "LAB_LIVE_EVERY_S"})
    os.environ["LAB_FIGURES_DIR"] = str(tmp_path)
    beats = []

    def lessons_run(notebooks, profile, out_dir):  # what each lesson's kernel would inherit
        beats.append((os.environ.get("LAB_PROGRESS"), feed.Every().period_s))
        return [], []

    monkeypatch.setattr(batch, "run_batch", lessons_run)
    os.environ["LAB_PROGRESS"] = "1"
    assert batch.main(["01"]) == 0
    assert beats == [("1", 1.0)]


@pytest.mark.slow
def test_a_plan_in_a_kernel_draws_one_chart_that_each_frame_replaces():
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(env={**os.environ, "LAB_PROGRESS": "1"})  # the tests turn progress off; a lesson has it on
    kc = km.client()
    kc.start_channels()
    code = (
        "from labserver import LabServer, run_plan\n"
        "with LabServer(procs=0) as server:\n"
        "    plan = [dict(pattern='sequential', users=u, io_ms=10) for u in (4, 8)]\n"
        "    done = run_plan(server, plan, duration_s=3, lesson='tests-live')\n"
        "print(sorted(p.name for r in done for p in r.path.glob('live.*')), [str(r.row['status']) for r in done])\n"
    )
    shown, updates, streams = [], [], []
    try:
        kc.wait_for_ready(timeout=60)
        msg_id = kc.execute(code)
        while True:
            msg = kc.get_iopub_msg(timeout=120)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "display_data":
                shown.append(content)
            elif kind == "update_display_data":
                updates.append(content)
            elif kind == "stream":
                streams.append(content["text"])
            elif kind == "error":
                pytest.fail("\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    text = "".join(streams)
    assert len(shown) == 1, text  # one chart for the cell
    assert "image/png" in shown[0]["data"]
    display_id = shown[0]["transient"]["display_id"]
    # about one frame a second over 6 s of load and the last frame, each replacing the one before
    assert len(updates) >= 4 and {u["transient"]["display_id"] for u in updates} == {display_id}
    assert all("image/png" in u["data"] for u in updates)
    assert "IProgress" not in text and "TqdmWarning" not in text and " users:" not in text  # no bar of any kind
    assert text.strip() == "[] ['ok', 'ok']"  # and the run folders keep no live file
