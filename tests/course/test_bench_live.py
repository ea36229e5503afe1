"""The bench's live-view part: its ratios with the view off and on, and the CPU a frame takes, in the report."""

from labserver.course.bench import TARGETS, table, targets


def _live(frame_ms: float) -> dict:
    return {
        "live": {
            "off_ratios": [0.991, 0.962],
            "on_ratios": [0.989, 0.958],
            "off_locust_ms": 0.21,
            "on_locust_ms": 0.22,
            "off_other_cpu": 0.03,
            "on_other_cpu": 0.05,
            "frames": 12,
            "frame_ms": frame_ms,
            "frame_ms_max": frame_ms * 4,
        }
    }


def test_a_frame_cheap_enough_meets_its_target_and_a_dear_one_misses():
    ((what, value, _, met),) = targets(_live(12.0))
    assert "frame" in what and value == 12.0 and met
    ((_, _, _, met),) = targets(_live(TARGETS["frame_ms"] + 1))
    assert not met


def test_the_table_shows_both_ratios_and_the_frame_cost():
    text = table(_live(12.0))
    assert "live view off  measured/predicted 0.991 0.962" in text
    assert "live view on   measured/predicted 0.989 0.958" in text
    assert "12 frames" in text and "median 12.0 ms" in text
