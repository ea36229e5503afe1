import pandas as pd
import pytest

from labserver.charts import overload


def _frame(slope: float) -> pd.DataFrame:
    t = [k / 100 for k in range(900)]
    return pd.DataFrame({"t_s": t, "latency_ms": [100 + slope * 1000 * x for x in t]})


def test_over_time_draws_the_loops_the_fluid_model_and_the_replay():
    fig = overload.over_time(
        {"open loop": _frame(0.2), "closed loop": _frame(0.0)},
        "ρ = 1.2",
        model=_frame(0.2).iloc[::100],
        replay=_frame(0.19),
    )
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert "model: S + (ρ − 1) t" in labels
    assert "the same queue replayed on the open loop's arrivals: mean" in labels
    replayed = next(line for line in fig.axes[0].get_lines() if line.get_label().startswith("the same queue"))
    # the rolling mean of a straight line is that line, but for its two ends
    assert replayed.get_ydata()[450] == pytest.approx(100 + 190 * 4.5, rel=0.01)


def test_over_time_without_a_replay_draws_no_replay():
    fig = overload.over_time({"open loop": _frame(0.2)}, "shedding")
    assert not any("replayed" in line.get_label() for line in fig.axes[0].get_lines())


def test_shedding_draws_the_accepted_requests_under_their_bound():
    fig = overload.shedding(_frame(0.0), bound_ms=200.0, duration_s=9, title="ρ = 1.5 with K = 20")
    ax = fig.axes[0]
    bound = ax.get_lines()[-1]
    assert bound.get_label() == "the bound S (1 + ⌈q / c⌉)"
    assert list(bound.get_xdata()) == [0, 9] and list(bound.get_ydata()) == [200.0, 200.0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[-1] == "the bound S (1 + ⌈q / c⌉)" and "model: S + (ρ − 1) t" not in labels
    assert ax.get_title() == "ρ = 1.5 with K = 20"
