"""Run profiles: the parameters each lesson gets in `quick`, `live`, `full` and `smoke` runs.

A lesson's own parameters cell holds its quick values, which is what a learner runs; `live`
is for an instructor in front of a class, every run cell done in about 20 s (`make live`
writes the lessons with these values in); `full` comes closer to the articles' scale;
`smoke` is the tiny run the tests use.
"""

from __future__ import annotations

from typing import Literal, get_args

from labserver.checks import choice
from labserver.lessons import LESSONS

# each lesson's own, beside its code (labserver/lessons/<module>.py)
PROFILES: dict[str, dict[str, dict]] = {
    slug: {name: dict(values) for name, values in lesson.profiles.items()} for slug, lesson in LESSONS.items()
}

Profile = Literal["quick", "live", "full", "smoke"]
NAMES: tuple[Profile, ...] = get_args(Profile)


def parameters(lesson: str, profile: Profile) -> dict:
    """The parameters to give `lesson` in `profile` (empty: the notebook's own defaults)."""
    choice("profile", profile, NAMES)
    return dict(PROFILES.get(lesson, {}).get(profile, {}))
