"""The bench's telemetry part: both ratios in the report's table, and the part can be skipped."""

from labserver.course import bench
from labserver.course.bench import telemetry
from labserver.course.bench.report import table

REPORT = {
    "telemetry": {
        "runs": ["sequential × 200", "threadpool × 80"],
        "on_ratios": [0.991, 0.987],
        "off_ratios": [0.995, 0.981],
        "largest_shift": 0.006,
        "valid": True,
    }
}


def test_the_table_prints_the_ratios_with_telemetry_on_and_off():
    lines = table(REPORT).splitlines()
    assert any(line.startswith("telemetry on ") and "0.991 0.987" in line for line in lines)
    assert any(line.startswith("telemetry off") and "0.995 0.981" in line for line in lines)
    assert any("largest difference" in line and "+0.006" in line for line in lines)


def test_telemetry_is_a_part_of_the_bench():
    assert "telemetry" in bench.PARTS
    assert telemetry.PLAN  # a plan to measure it with
