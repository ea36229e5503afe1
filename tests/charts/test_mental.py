"""The mental model's picture: four ways to serve requests that arrive together, computed, then drawn."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from labserver.charts import mental


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _done_at(frame, way: str, lanes: str = "") -> float:
    bars = frame[(frame["way"] == way) & frame["lane"].str.startswith(lanes)]
    return bars["end_ms"].max()


def test_only_blocking_the_loop_serves_the_requests_one_after_another():
    frame = mental.timelines(io_ms=100, requests=3)
    assert list(frame.columns) == mental.COLUMNS
    assert _done_at(frame, "def + time.sleep") == 100
    assert _done_at(frame, "async def + await asyncio.sleep") == 100
    assert _done_at(frame, "async def + time.sleep") == 300  # requests × io_ms
    blocked = frame[(frame["way"] == "async def + time.sleep") & (frame["state"] == "loop blocked")]
    assert sorted(blocked[blocked["lane"] != mental.LOOP]["end_ms"]) == [100, 200, 300]


def test_gather_overlaps_the_awaits_one_request_makes_in_turn():
    frame = mental.timelines(io_ms=40, requests=4)
    assert _done_at(frame, "asyncio.gather", "in turn") == 160
    assert _done_at(frame, "asyncio.gather", "gathered") == 40


def test_what_each_wait_holds():
    frame = mental.timelines()
    held = frame.groupby("way", sort=False)["state"].agg(set)
    assert "waiting, thread held" in held["def + time.sleep"]
    assert "loop free" in held["async def + await asyncio.sleep"]
    assert "loop free" not in held["async def + time.sleep"]
    assert set(frame["state"]) <= set(mental.STATES)  # every state has its colour
    assert (frame["end_ms"] > frame["start_ms"]).all()


def test_the_figure_has_a_panel_per_way_each_saying_when_the_last_request_was_done():
    fig = mental.four_ways(io_ms=50, requests=2)
    assert len(fig.axes) == len(mental.WAYS)
    assert [ax.get_title(loc="left").split(":")[0] for ax in fig.axes] == list(mental.WAYS)
    notes = [[t.get_text() for t in ax.texts] for ax in fig.axes]
    assert "last request done at 100 ms" in notes[2]
    assert {"in turn: done at 100 ms", "gathered: done at 50 ms"} <= set(notes[3])
    fig.canvas.draw()  # lays out and renders without error


def test_a_bad_input_says_what_to_change():
    with pytest.raises(ValueError, match="requests must be a whole number from 1 to 6"):
        mental.timelines(requests=0)
    with pytest.raises(ValueError, match="io_ms must be more than 0"):
        mental.timelines(io_ms=-1)
