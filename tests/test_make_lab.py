"""`make lab` as root adds --allow-root and says why; as anyone else it is unchanged.

`make -n` prints the recipe without running it; a fake `id` first on PATH plays the user.
"""

import os
import shutil
import subprocess

import pytest

from labserver.paths import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _make_n(*args: str, path: str = "") -> list[str]:
    """What `make -n args` prints (the recipes, not run), with `path` first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    if path:
        env["PATH"] = f"{path}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _make_lab_as(uid: int, tmp_path) -> list[str]:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (fake / "id").chmod(0o755)
    return _make_n("lab", path=str(fake))


def _jupyter(lines: list[str]) -> str:
    (line,) = [line for line in lines if "jupyter lab" in line]
    return line


def test_as_root_lab_adds_allow_root_and_says_why(tmp_path):
    lines = _make_lab_as(0, tmp_path)
    assert "--allow-root" in _jupyter(lines).split()
    notes = [line for line in lines if line.startswith("echo") and "--allow-root" in line]
    assert len(notes) == 1
    assert "root" in notes[0] and "refuses" in notes[0]


def test_as_anyone_else_lab_has_no_allow_root(tmp_path):
    lines = _make_lab_as(1000, tmp_path)
    assert "--allow-root" not in "\n".join(lines)


@pytest.mark.parametrize("uid", [0, 1000])
def test_lab_keeps_its_token_and_localhost(uid, tmp_path):
    words = _jupyter(_make_lab_as(uid, tmp_path)).split()
    assert words[:5] == ["env", "-u", "JUPYTER_TOKEN", "-u", "JUPYTER_TOKEN_FILE"]
    assert "--ServerApp.ip=127.0.0.1" in words
    assert not [w for w in words if "token" in w.lower() and w.startswith("--")]


def _recipe(target: str) -> list[str]:
    """The installs `make target` would run on a fresh clone: every recipe it depends on, forced (-B)."""
    return [line for line in _make_n("-B", target) if "pip install" in line]


@pytest.mark.parametrize("target", ["lab", "figures", "live"])
def test_a_learner_s_targets_install_no_developer_tools_and_show_progress(target):
    installs = _recipe(target)
    assert any(line.endswith("-e .") for line in installs)
    assert not any("[dev" in line for line in installs)
    assert not any("--quiet" in line and "-e ." in line for line in installs)  # pip shows each package


@pytest.mark.parametrize("target", ["test", "lint"])
def test_the_developer_s_targets_add_the_tools(target):
    assert any("'.[dev]'" in line for line in _recipe(target))
