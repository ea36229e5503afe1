"""Lesson 01 run in JupyterLab in a real Chromium, as a learner runs it: `make test-browser`.

JupyterLab starts with the arguments of `make lab` (read from `make -n lab`: token on, 127.0.0.1,
--allow-root as root), on a copy of lesson 01 with the smoke profile's parameters injected the way
papermill injects them. Chromium opens it with the token, runs all cells from the Run menu and waits
for JupyterLab's own state to say the run is over: every code cell's prompt has its execution count,
none shows `[*]`, and the notebook toolbar's kernel status is idle. Then: every chart cell shows an
image, no cell shows an error, and the live view's image changed at least twice while the lesson ran.
A full-page screenshot is saved to data/browser/. JupyterLab and its kernel are stopped at the end,
always, and nothing of them may be left: no process, no listening port.

Playwright drives Debian's Chromium (/usr/bin/chromium): it never downloads a browser of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from labserver.course.profiles import parameters
from labserver.paths import NOTEBOOKS, ROOT

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LESSON = "01_async_vs_sync"
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = ROOT / "data" / "browser" / f"{LESSON}.png"
KERNEL_DISPLAY_NAME = "Python (Concurrency Lab)"
START_S = 60  # JupyterLab's start, and the kernel's
RUN_S = 300  # the whole lesson in the smoke profile, with room for a busy machine
STOP_S = 30  # JupyterLab shuts its kernel down before it exits
URL = re.compile(r"(http://127\.0\.0\.1:(\d+)/lab\?token=([0-9a-f]+))")

# JupyterLab's settings and workspaces for this test only, in a folder of its own: no learner's
# settings change what the test sees, and the test leaves nothing in ~/.jupyter. Every cell stays
# attached to the page (windowing off), so every output can be read and the screenshot shows them.
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    # nothing fetched from the network, and no news toast over the notebook
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}

# In the page: the execution prompts of the code cells, and the notebook toolbar's kernel status.
STATE_JS = """() => {
    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-Cell.jp-CodeCell .jp-InputPrompt')]
        .map(p => p.textContent.trim());
    const indicator = document.querySelector('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');
    return {prompts, status: indicator ? indicator.dataset.status : null};
}"""

# Over when no cell waits or runs ([*]), at least one ran, and the kernel is idle. A cell that
# raises stops Run All: the cells after it are left without a count, which the test then reports.
DONE_JS = """() => {
    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-Cell.jp-CodeCell .jp-InputPrompt')]
        .map(p => p.textContent);
    const indicator = document.querySelector('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');
    return prompts.length > 0 && !prompts.some(t => t.includes('*')) && prompts.some(t => /\\d/.test(t))
        && indicator !== null && indicator.dataset.status === 'idle';
}"""

# Records every new image of one cell's outputs while the lesson runs: the live view replaces its
# frame through a display handle, so JupyterLab swaps the <img> (or its src) about once a second.
WATCH_JS = """(index) => {
    const live = window.__liveFrames = {sizes: [], last: ''};
    const look = () => {
        const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[index];
        if (!cell) return;
        const src = [...cell.querySelectorAll('.jp-OutputArea-output img')].map(img => img.src).join('|');
        if (src && src !== live.last) { live.last = src; live.sizes.push(src.length); }
    };
    new MutationObserver(look).observe(document.querySelector('.jp-Notebook'),
        {subtree: true, childList: true, attributes: true, attributeFilter: ['src']});
}"""

# Per cell: its images (and whether each decoded into pixels) and the text of its outputs.
OUTPUTS_JS = """() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].map(cell => ({
    images: [...cell.querySelectorAll('.jp-OutputArea-output img')].map(img => img.naturalWidth),
    errors: [...cell.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
        .map(o => o.textContent),
}))"""

# IPython's traceback of an exception (ultratb), and the last line of any error's report.
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\s*\w*(Error|Exception|Interrupt)\b", re.MULTILINE)


def smoke_copy(folder: Path) -> nbformat.NotebookNode:
    """Lesson 01 in `folder`, the smoke profile's parameters injected after its parameters cell as papermill does."""
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = parameterize_notebook(load_notebook_node(str(NOTEBOOKS / f"{LESSON}.ipynb")), parameters(LESSON, "smoke"))
    nbformat.write(nb, folder / f"{LESSON}.ipynb")
    return nb


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def lab_command(folder: Path, port: int) -> list[str]:
    """`make lab`'s own command line (as `make -n lab` prints it), on `folder` instead of notebooks/."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    extra = f"--no-browser --ServerApp.port={port} --ServerApp.port_retries=0"
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "lab", f"LAB_ARGS={extra}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "jupyter lab" in line]
    words = shlex.split(line)
    assert words.count("notebooks/") == 1, f"make lab no longer opens notebooks/: {line}"
    words[words.index("notebooks/")] = str(folder)
    return words


class Lab:
    """JupyterLab on `folder`, started as `make lab` starts it; `stop()` ends it and its kernels."""

    def __init__(self, folder: Path, log: Path, home: Path):
        self.port = free_port()
        self.log = log
        # A learner's environment: the test session's LAB_PROGRESS=0 would turn the live view off. Its
        # LAB_DATA_DIR stays, so that the lesson's runs land in the session's folder, not in data/.
        env = {k: v for k, v in os.environ.items() if k != "LAB_PROGRESS"}
        env["JUPYTERLAB_SETTINGS_DIR"] = str(home / "settings")
        env["JUPYTERLAB_WORKSPACES_DIR"] = str(home / "workspaces")
        for plugin, values in SETTINGS.items():
            path = home / "settings" / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        with open(log, "wb") as out:
            # its own session: a Ctrl-C of pytest does not reach it, and stop() can end its whole group
            self.proc = subprocess.Popen(
                lab_command(folder, self.port),
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.url = self._wait_for_url()
        self.seen: dict[int, psutil.Process] = {}  # every process it started (its kernels), for stop()

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            m = URL.search(self.log.read_text(errors="replace"))
            if m:
                assert int(m.group(2)) == self.port
                return m.group(1)
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        pytest.fail(f"JupyterLab printed no URL with a token:\n{self.log.read_text(errors='replace')[-3000:]}")

    def note_children(self) -> None:
        """Remember the processes JupyterLab started so far: a kernel runs in a session of its own."""
        with contextlib.suppress(psutil.Error):
            for p in psutil.Process(self.proc.pid).children(recursive=True):
                self.seen.setdefault(p.pid, p)

    def stop(self) -> list[str]:
        """SIGTERM: JupyterLab shuts its kernels down, then exits. Whatever is left is killed, and named."""
        self.note_children()
        left = []
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_S)
            except subprocess.TimeoutExpired:
                left.append(f"JupyterLab (pid {self.proc.pid}) still running {STOP_S} s after SIGTERM")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        _, alive = psutil.wait_procs(list(self.seen.values()), timeout=STOP_S)
        for p in alive:
            with contextlib.suppress(psutil.Error):
                left.append(f"{p.pid}: {' '.join(p.cmdline())[:160]}")
                p.kill()
        if listening(self.port):
            left.append(f"port {self.port} still listening")
        return left


@pytest.fixture
def lab(tmp_path):
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: `make test-browser` installs it as root; or: sudo apt-get install chromium"
        )
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = smoke_copy(folder)
    started = Lab(folder, tmp_path / "lab.log", tmp_path / "jupyterlab")
    left: list[str] = []
    try:
        yield started, nb
    finally:
        left = started.stop()
    assert not left, "JupyterLab left behind:\n" + "\n".join(left)


def cell_indexes(nb: nbformat.NotebookNode) -> tuple[list[int], int]:
    """The chart cells (a lesson's chart cell ends with plots.save) and the one cell that measures (sweep)."""
    charts = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "plots.save(" in c.source]
    (live,) = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and re.search(r"\bsweep\(", c.source)]
    assert len(charts) >= 2, "lesson 01 has a throughput and a latency chart"
    return charts, live


def test_lesson_runs_in_jupyterlab_in_chromium(lab):
    sync_api = pytest.importorskip("playwright.sync_api", reason="make test-browser installs Playwright")
    started, nb = lab
    charts, live = cell_indexes(nb)
    code_cells = sum(c.cell_type == "code" for c in nb.cells)
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    # As root Chromium refuses to start with its sandbox; Playwright never downloads a browser: Debian's.
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(START_S * 1000)
            url = started.url.replace("/lab?", f"/lab/tree/{LESSON}.ipynb?")
            page.goto(url)
            # the notebook, all its cells attached, and its kernel (the lab's own) started and idle
            page.locator(".jp-Notebook .jp-Cell").nth(len(nb.cells) - 1).wait_for(state="attached")
            assert page.locator(".jp-Notebook .jp-Cell").count() == len(nb.cells)
            kernel = page.locator(".jp-NotebookPanel .jp-KernelName")
            sync_api.expect(kernel).to_have_text(KERNEL_DISPLAY_NAME, timeout=START_S * 1000)
            page.locator('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status="idle"]').wait_for()
            started.note_children()

            page.evaluate(WATCH_JS, live)
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
            try:
                page.wait_for_function(DONE_JS, timeout=RUN_S * 1000, polling=500)
            finally:
                started.note_children()
                screenshot(page, SCREENSHOT)
            state = page.evaluate(STATE_JS)
            outputs = page.evaluate(OUTPUTS_JS)
            frames = page.evaluate("() => window.__liveFrames.sizes")
        finally:
            browser.close()

    # (b) no cell shows an error, and every code cell ran (Run All stops at the first error)
    shown = {i: text[-2000:] for i, o in enumerate(outputs) for text in o["errors"] if TRACEBACK.search(text)}
    assert not shown, f"cells show an error: {shown}"
    assert len(state["prompts"]) == code_cells
    assert all(re.fullmatch(r"\[\d+\]:", p) for p in state["prompts"]), f"cells left unrun: {state['prompts']}"
    # (a) every chart cell shows its chart as an image that decoded into pixels
    for i in charts:
        assert outputs[i]["images"], f"chart cell {i} shows no image"
        assert all(width > 0 for width in outputs[i]["images"]), f"chart cell {i}: an image did not load"
    # (c) the live view drew a first frame and replaced it at least twice while the lesson ran
    assert len(frames) >= 3, f"the live view changed {max(len(frames) - 1, 0)} times (frames: {frames})"
    assert outputs[live]["images"], "the measuring cell shows no live view"


def screenshot(page, path: Path) -> None:
    """The whole notebook: JupyterLab scrolls inside its panel, so the page first grows to the notebook's height."""
    height = page.evaluate(
        """() => {
            const scroller = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer');
            if (!scroller) return window.innerHeight;
            const box = scroller.getBoundingClientRect();
            return window.innerHeight - box.height + scroller.scrollHeight;
        }"""
    )
    page.set_viewport_size({"width": 1280, "height": min(max(int(height), 900), 16000)})
    # JupyterLab lays itself out again on the resize, in the next animation frames
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.evaluate("() => document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer')?.scrollTo(0, 0)")
    page.screenshot(path=str(path), full_page=True)
