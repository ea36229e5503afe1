"""Run profiles for the batch: the parameters each lesson gets in `quick`, `full` and `smoke` runs.

A lesson's own parameters cell holds its quick values, which is what a learner runs;
`full` comes closer to the articles' scale; `smoke` is the tiny run the tests use.
"""

from __future__ import annotations

PROFILES: dict[str, dict[str, dict]] = {
    "00_start_here": {
        "quick": {},
        "full": {"users": [50, 100, 200, 400, 800], "duration_s": 15},
        "smoke": {"users": [5, 10], "requests_users": [10], "duration_s": 2},
    },
    "01_async_vs_sync": {
        "quick": {},
        "full": {"users": [10, 20, 40, 80, 160, 320], "duration_s": 15},
        "smoke": {"users": [10, 80], "duration_s": 2},
    },
}

NAMES = ("quick", "full", "smoke")


def parameters(lesson: str, profile: str) -> dict:
    """The parameters to give `lesson` in `profile` (empty: the notebook's own defaults)."""
    if profile not in NAMES:
        raise ValueError(f"unknown profile {profile!r}; choose one of: {', '.join(NAMES)}")
    return dict(PROFILES.get(lesson, {}).get(profile, {}))
