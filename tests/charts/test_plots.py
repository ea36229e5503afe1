"""Charts: measured beside predicted, axes with units, invalid runs marked."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from labserver.charts import plots
from labserver.demo.patterns import PATTERNS
from labserver.labels import PATTERN_LABELS


@pytest.fixture
def runs() -> pd.DataFrame:
    return pd.DataFrame(
        {"pattern": ["threadpool", "threadpool", "sequential", "sequential"], "users": [10, 80, 10, 80],
         "rps": [99.0, 398.0, 99.5, 790.0], "predicted_rps": [100.0, 400.0, 100.0, 800.0],
         "p50_ms": [100.0, 200.0, 100.0, 100.0], "p95_ms": [101.0, 210.0, 101.0, 103.0],
         "predicted_ms": [100.0, 200.0, 100.0, 100.0], "locust_cpu": [0.1, 0.3, 0.1, 0.5],
         "valid": [True, True, True, False]}
    )  # fmt: skip


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _labels(ax) -> list[str]:
    return ax.get_legend_handles_labels()[1]


def test_throughput_shows_prediction_and_invalid_runs(runs):
    fig = plots.throughput(runs, title="async serves 2× the thread pool")
    ax = fig.axes[0]
    assert ax.get_title() == "async serves 2× the thread pool"
    assert ax.get_ylabel() == "throughput (req/s)"
    assert ax.get_xlabel() == "concurrent users"
    labels = _labels(ax)
    thread, loop = PATTERN_LABELS["threadpool"], PATTERN_LABELS["sequential"]
    assert {f"{thread} measured", f"{thread} predicted", f"{loop} measured", f"{loop} predicted"} <= set(labels)
    assert not [label for label in labels if label.startswith(("threadpool", "sequential"))]  # the names, never
    assert "invalid run (see problems)" in labels


def test_throughput_draws_the_model_through_every_user_count_it_is_given(runs):
    from labserver.theory import model

    curve = model.predict_frame(["threadpool", "sequential"], list(range(1, 81)), io_ms=100, threads=40)
    ax = plots.throughput(runs, title="t", curve=curve).axes[0]
    thread = PATTERN_LABELS["threadpool"]
    (line,) = [line for line in ax.get_lines() if line.get_label() == f"{thread} model, every user count"]
    xs, ys = line.get_data()
    assert list(xs) == list(range(1, 81))
    assert ys[39] == pytest.approx(400, rel=0.01) and ys[79] == pytest.approx(400, rel=0.01)  # the pool's 40 / io
    assert ys[19] == pytest.approx(200, rel=0.01)  # below it, users / io


def test_latency_has_units(runs):
    ax = plots.latency(runs, title="t").axes[0]
    assert ax.get_ylabel() == "latency (ms)"
    assert "async def + await predicted mean" in _labels(ax)


def test_history_bars_and_generator_cpu(runs):
    h = pd.DataFrame({"second": [0, 1, 2], "rps": [10, 12, 11]})
    assert plots.history({"gather": h}, title="t").axes[0].get_xlabel() == "time since the run started (s)"
    assert plots.bars(runs[runs.users == 80], title="t").axes[0].get_ylabel() == "throughput (req/s)"
    runs["client"] = "fast"
    assert plots.generator_cpu(runs, title="t").axes[0].get_ylabel() == "Locust CPU, per process (cores)"


def test_two_locust_processes_are_drawn_against_saturation_one_at_a_time(runs):
    # 0.79 of a core over two processes is 0.4 each: far from the 90% each is judged by
    runs["client"], runs["locust_cpu"], runs["processes"] = "fast", [0.2, 0.3, 0.5, 0.79], [1, 1, 1, 2]
    line = plots.generator_cpu(runs, title="t").axes[0].lines[0]
    assert max(line.get_ydata()) == pytest.approx(0.5)


def test_save_only_when_a_batch_asks(runs, tmp_path, monkeypatch):
    fig = plots.throughput(runs, title="t")
    monkeypatch.delenv("LAB_FIGURES_DIR", raising=False)
    plots.save(fig, "00_x", "throughput")
    assert not any(tmp_path.iterdir())
    monkeypatch.setenv("LAB_FIGURES_DIR", str(tmp_path))
    plots.save(fig, "00_x", "p95 at 80 users")
    assert (tmp_path / "00_x" / "p95_at_80_users.png").stat().st_size > 0


def test_save_shows_nothing_in_a_cell_it_ends(runs, tmp_path, monkeypatch):
    # A chart cell ends with `plots.save(...)` and Jupyter displays a cell's last value unless it is
    # None: anything returned here would print (a PosixPath) above every chart of every lesson.
    fig = plots.throughput(runs, title="t")
    monkeypatch.delenv("LAB_FIGURES_DIR", raising=False)
    assert plots.save(fig, "00_x", "throughput") is None
    monkeypatch.setenv("LAB_FIGURES_DIR", str(tmp_path))
    assert plots.save(fig, "00_x", "throughput") is None
    assert (tmp_path / "00_x" / "throughput.png").exists()


def test_generator_cpu_marks_saturation_at_the_shared_threshold(runs):
    runs["client"] = "fast"
    ax = plots.generator_cpu(runs, title="t").axes[0]
    assert "saturated (90% of a core)" in _labels(ax)
    assert [line.get_ydata()[0] for line in ax.lines if line.get_label().startswith("saturated")] == [0.9]


def test_throughput_bounds_adds_littles_law_and_one_workers_ceiling(runs):
    runs["client"], runs["little_rps"] = "fast", [100.0, 800.0, 100.0, 800.0]
    fast = runs[runs["pattern"] == "sequential"]
    ax = plots.throughput_bounds(runs, "one worker tops out near 4,000", little=fast, ceiling_rps=4000.0).axes[0]
    assert ax.get_title() == "one worker tops out near 4,000"
    assert {"fast measured", "fast predicted", "Little's law alone", "one worker's ceiling, 1 / D"} <= set(_labels(ax))
    ceiling = next(line for line in ax.lines if line.get_label() == "one worker's ceiling, 1 / D")
    assert list(ceiling.get_ydata()) == [4000.0, 4000.0]


def test_process_cpu_shows_the_server_and_locust_against_saturation(runs):
    runs["client"], runs["server_cpu"] = "fast", [0.1, 0.4, 0.1, 0.8]
    ax = plots.process_cpu(runs, title="t").axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("measured throughput (req/s)", "CPU (cores)")
    assert {"server (1 worker)", "Locust, per process", "saturated (90% of a core)"} <= set(_labels(ax))
    assert "server, busy or waiting for a CPU" not in _labels(ax)  # not measured: not drawn


def test_process_cpu_adds_the_worker_s_wait_for_a_cpu_where_it_was_measured(runs):
    runs["client"], runs["server_cpu"], runs["worker_waited"] = "fast", [0.1, 0.4, 0.1, 0.8], [0.0, 0.01, 0.0, 0.15]
    ax = plots.process_cpu(runs, title="t").axes[0]
    assert "server, busy or waiting for a CPU" in _labels(ax)
    tops = [max(line.get_ydata(), default=0) for line in ax.lines if len(line.get_ydata()) > 2]
    assert max(tops) == pytest.approx(0.95)  # the busiest run: 0.8 busy + 0.15 waiting


def test_mark_draws_a_labelled_line_at_x(runs):
    fig = plots.mark(plots.throughput(runs, title="t"), 40, "40 threads")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["40 threads"]
    assert any(list(line.get_xdata()) == [40, 40] for line in ax.lines)


def test_ratio_bars_put_each_source_against_the_model(runs):
    runs["ratio"] = runs["rps"] / runs["predicted_rps"]
    both = pd.concat([runs.assign(source="article"), runs.assign(source="ours")])
    ax = plots.ratio_bars(both, title="t").axes[0]
    assert ax.get_ylabel() == "measured / predicted throughput" and ax.get_ylim() == (0, 1.2)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["article", "ours"]


def test_latency_bars_show_p50_p95_and_the_predicted_mean(runs):
    ax = plots.latency_bars(runs[runs["users"] == 80], title="t").axes[0]
    assert ax.get_ylabel() == "latency (ms)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(plots.LATENCIES.values())


def test_a_pattern_shows_as_a_learner_reads_it_on_legends_and_axes(runs):
    # the legend of a chart by pattern, and the ticks of the bars by pattern: the label, never the name alone
    legend = _labels(plots.throughput(runs, title="t").axes[0])
    assert "def (thread pool) measured" in legend and "async def + await predicted" in legend
    runs["ratio"] = runs["rps"] / runs["predicted_rps"]
    both = pd.concat([runs.assign(source="article"), runs.assign(source="ours")])
    for fig in (plots.bars(runs, title="t"), plots.ratio_bars(both, title="t"), plots.latency_bars(runs, title="t")):
        ticks = [t.get_text().replace("\n", " ") for t in fig.axes[0].get_xticklabels()]
        assert ticks == ["def (thread pool)", "async def + await"]
        assert fig.axes[0].get_xlabel() == "endpoint"
    assert list(runs["pattern"].unique()) == ["threadpool", "sequential"]  # the frame drawn is left as it was


def test_a_hue_other_than_pattern_is_shown_as_it_is(runs):
    runs["client"] = ["threadpool", "threadpool", "fast", "fast"]  # a value that is also a pattern's name
    assert "threadpool measured" in _labels(plots.throughput(runs, title="t", hue="client").axes[0])


def test_every_pattern_has_its_colour():
    assert set(plots.COLORS) == set(PATTERNS)
    assert len(set(plots.LABEL_COLORS)) == len(PATTERNS)  # two lines or one, no two labels alike


def test_lesson_07_s_routes_take_their_endpoint_s_colour_and_anything_else_grey():
    from labserver.demo.routes import SHOP

    assert set(plots.ROUTE_COLORS) == set(SHOP)
    assert plots.pattern_color("sync_select") == plots.COLORS["threadpool"]  # a `def` endpoint: the thread pool's
    assert plots.pattern_color("async_select") == plots.COLORS["sequential"]
    assert plots.pattern_color("no such pattern") == "grey"


def test_bars_mark_what_was_predicted_before_any_run_across_each_pair(runs):
    frame = runs[runs.users == 80].assign(model_rps=[100.0, 300.0])
    ax = plots.bars(frame, title="t", mark=("model_rps", "model before the runs")).axes[0]
    assert "model before the runs" in _labels(ax)
    ticks = ax.collections[-1].get_offsets()
    assert ticks[:, 0].tolist() == [0, 1]  # one per pair, at the pairs' places
    assert ticks[:, 1].tolist() == [100.0, 300.0]
