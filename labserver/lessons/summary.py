"""Lesson 99, the summary: its plan and parameter checks, and its parameters for each run profile."""

from __future__ import annotations

from labserver import checks
from labserver.lessons.lesson import Lesson

# 99 only reads the runs on disk: nothing to size.
LESSON = Lesson("99_summary", profiles={"quick": {}, "live": {}, "full": {}, "smoke": {}}, chart="summary.png")


def plan(*, lessons: list[str] | str) -> list[str]:
    """Lesson 99: the lesson prefixes to include, as a list (one prefix alone is a list of one)."""
    return checks.parameter("lessons", lessons, list[str])
