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
