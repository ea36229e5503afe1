"""The CPUs the lab may use: the affinity mask and the cgroup quota (v1 and v2), whichever is smaller."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from labserver.demo import cpus


def _v2(tmp_path: Path, path: str, limits: dict[str, str]) -> tuple[Path, Path]:
    """A fake pure-v2 hierarchy: `limits` maps a cgroup folder to its cpu.max."""
    for folder, value in limits.items():
        (tmp_path / folder.lstrip("/")).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder.lstrip("/") / "cpu.max").write_text(value + "\n")
    proc = tmp_path / "proc-cgroup"
    proc.write_text(f"0::{path}\n")
    return tmp_path, proc


def test_no_quota_means_the_affinity_mask():
    root, proc = Path("/nonexistent"), Path("/nonexistent/cgroup")
    assert cpus.cgroup_quota(root, proc) is None
    assert cpus.cores(root, proc) == len(cpus.usable_cpus() or range(os.cpu_count()))


def test_a_v2_quota_caps_the_cores(tmp_path):
    root, proc = _v2(tmp_path, "/lab", {"/": "max 100000", "/lab": "150000 100000"})
    assert cpus.cgroup_quota(root, proc) == 1.5
    assert cpus.cores(root, proc) == min(1.5, len(cpus.usable_cpus()))
    assert cpus.whole_cores(root, proc) == 1


def test_the_smallest_quota_on_the_way_up_wins(tmp_path):
    root, proc = _v2(tmp_path, "/a/b", {"/a": "50000 100000", "/a/b": "max 100000"})
    assert cpus.cgroup_quota(root, proc) == 0.5


def test_a_v1_quota_caps_the_cores(tmp_path):
    folder = tmp_path / "cpu,cpuacct" / "docker" / "abc"
    folder.mkdir(parents=True)
    (folder / "cpu.cfs_quota_us").write_text("100000\n")
    (folder / "cpu.cfs_period_us").write_text("100000\n")
    proc = tmp_path / "proc-cgroup"
    proc.write_text("4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n")
    assert cpus.cgroup_quota(tmp_path, proc) == 1.0
    assert cpus.cores(tmp_path, proc) == 1.0


def test_a_v1_quota_of_minus_one_is_no_quota(tmp_path):
    folder = tmp_path / "cpu"
    folder.mkdir()
    (folder / "cpu.cfs_quota_us").write_text("-1\n")
    (folder / "cpu.cfs_period_us").write_text("100000\n")
    proc = tmp_path / "proc-cgroup"
    proc.write_text("1:cpu:/\n")
    assert cpus.cgroup_quota(tmp_path, proc) is None


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux affinity")
def test_affinity_counts_what_taskset_allows():
    code = "from labserver.demo import cpus; print(cpus.cores(), cpus.whole_cores())"
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1.0", "1"]


def _v1_cpu_mount() -> Path | None:
    for name in ("cpu,cpuacct", "cpu"):
        mount = cpus.CGROUP_ROOT / name
        if (mount / "cpu.cfs_quota_us").exists() and os.access(mount, os.W_OK):
            return mount
    return None


@pytest.mark.skipif(_v1_cpu_mount() is None, reason="needs a writable cgroup v1 cpu controller (root)")
def test_a_real_quota_is_seen_by_a_process_inside_it():
    group = _v1_cpu_mount() / f"lab-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        (group / "cpu.cfs_quota_us").write_text("50000")
        (group / "cpu.cfs_period_us").write_text("100000")
        code = "from labserver.demo import cpus; print(cpus.cores())"
        script = f"echo $$ > {group}/cgroup.procs && exec {sys.executable} -c '{code}'"
        out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "0.5"
    finally:
        group.rmdir()


def test_throttled_seconds_from_v2_and_v1_stats(tmp_path):
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "cpu.stat").write_text("usage_usec 10\nnr_throttled 3\nthrottled_usec 2500000\n")
    proc = tmp_path / "proc-cgroup"
    proc.write_text("0::/lab\n")
    assert cpus.throttled_s(tmp_path, proc) == 2.5
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.stat").write_text("nr_periods 5\nnr_throttled 1\nthrottled_time 4000000000\n")
    proc.write_text("1:cpu:/\n")
    assert cpus.throttled_s(tmp_path, proc) == 4.0


def test_no_cgroup_no_throttling():
    assert cpus.throttled_s(Path("/nonexistent"), Path("/nonexistent/cgroup")) == 0.0
