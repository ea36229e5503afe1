import pytest

from labserver.course import profiles


def test_every_profile_name_is_known():
    for lesson in profiles.PROFILES.values():
        assert set(lesson) == set(profiles.NAMES)


def test_smoke_runs_are_tiny():
    for name in profiles.PROFILES:
        smoke = profiles.parameters(name, "smoke")
        # 06 counts requests and bounds each run by max_run_s; 99 measures nothing
        assert smoke.get("duration_s", 0) <= 3 and smoke.get("max_run_s", 0) <= 3
        users = smoke.get("users", [])
        assert all(u <= 100 for u in (users if isinstance(users, list) else [users]))


def test_unknown_lesson_gets_the_defaults():
    assert profiles.parameters("99_nothing", "full") == {}


def test_parameters_are_a_copy():
    name = next(iter(profiles.PROFILES))
    profiles.parameters(name, "smoke")["duration_s"] = 999
    assert profiles.parameters(name, "smoke")["duration_s"] != 999


def test_unknown_profile_lists_the_choices():
    with pytest.raises(ValueError, match="quick, live, full, smoke"):
        profiles.parameters("98_the_instrument", "fast")
