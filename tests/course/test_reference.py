import json
import os
from datetime import datetime

from labserver.course import executed, reference


def chart(path, size=10):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG" + bytes(size))
    return path


def test_choose_takes_the_lessons_entry_then_throughput_then_the_first_chart(tmp_path):
    chart(tmp_path / "07_database" / "bounds.png")
    chart(tmp_path / "07_database" / "throughput.png")
    chart(tmp_path / "01_async_vs_sync" / "latency.png")
    chart(tmp_path / "01_async_vs_sync" / "throughput.png")
    chart(tmp_path / "08_new" / "zeta.png")
    chart(tmp_path / "08_new" / "alpha.png")
    (tmp_path / "09_empty").mkdir()
    assert reference.choose(tmp_path / "07_database").name == "bounds.png"
    assert reference.choose(tmp_path / "01_async_vs_sync").name == "throughput.png"
    assert reference.choose(tmp_path / "08_new").name == "alpha.png"
    assert reference.choose(tmp_path / "09_empty") is None


def test_cpu_model_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t: fpu\n")
    assert reference.cpu_model(info) == "AMD EPYC 7B13"
    assert reference.cpu_model(tmp_path / "missing")  # falls back to what platform knows, never empty


def test_copy_replaces_the_charts_and_says_where_they_come_from(tmp_path):
    figures, out = tmp_path / "figures", tmp_path / "reference"
    chart(figures / "00_start_here" / "throughput.png", 5)
    chart(figures / "00_start_here" / "cpu.png")
    chart(figures / "99_summary" / "summary.png", 7)
    chart(out / "05_gone.png")  # from a lesson no longer in the batch
    written = datetime.fromisoformat("2026-11-23T23:00:30+00:00").timestamp()
    os.utime(figures / "00_start_here" / "throughput.png", (written, written))
    ran = tmp_path / "executed"
    ran.mkdir()
    times = {"start_time": "2026-11-23T23:00:00+00:00", "end_time": "2026-11-23T23:01:00+00:00"}
    nb = {"cells": [{"cell_type": "markdown", "source": "# 00 · Start"}], "metadata": {"papermill": times}}
    (ran / "00_start_here.ipynb").write_text(json.dumps(nb))
    env = {"cpu_count": 2, "usable_cores": 2.0, "platform": "Linux-x86_64", "python": "3.11.7", "git_commit": "abc123"}
    runs = [
        {
            "lesson": "00_start_here",
            "started_at": "2026-11-23T23:00:10+00:00",
            "result": {"batch": "b7"},
            "environment": env,
        }
    ]
    found = executed.lessons(ran, runs, notebooks=tmp_path)
    charts = reference.copy(figures, out, found, "AMD EPYC")
    assert sorted(charts) == ["00_start_here", "99_summary"]
    assert sorted(p.name for p in out.glob("*.png")) == ["00_start_here.png", "99_summary.png"]
    assert (out / "00_start_here.png").read_bytes() == (figures / "00_start_here" / "throughput.png").read_bytes()
    notes = (out / "README.md").read_text()
    assert "**Measured on:** 2 CPUs, Linux-x86_64, Python 3.11.7." in notes
    assert "**CPU model:** AMD EPYC" in notes
    assert (
        "| [00_start_here](00_start_here.png) | `00_start_here/throughput.png` | 2026-11-23 23:00–23:01 UTC |" in notes
    )
    assert "abc123 · b7" in notes
    assert "| [99_summary](99_summary.png) | `99_summary/summary.png` | drawn " in notes  # no executed copy: its date


def test_no_figures_is_an_error_that_says_what_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    assert reference.main(["--out", str(tmp_path / "reference")]) == 1
    assert "make figures" in capsys.readouterr().err
    assert not (tmp_path / "reference").exists()
