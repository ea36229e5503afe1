"""A lesson's claims, checked against its own data, with a verdict a person can read.

Each check prints its verdict as it is made; `Claims.report()` shows them all and, when
the lesson's `strict` parameter is true, raises if any failed. A batch run collects the
verdicts of every lesson through the file named by LAB_CLAIMS_FILE.

Every check names its claim twice: a sentence for the reader, which may be reworded, and a
`key` (an id such as "gather-3x", unique in its lesson) that stays, so that the claim's
history over batches (`batch --repeat`) follows the key, not the wording.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import pandas as pd

from labserver import config
from labserver.demo import cpus

KEY = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")  # an id: lowercase letters and digits, words joined by hyphens


class ClaimFailed(AssertionError):
    """A lesson's claim does not hold on this machine's data."""


@dataclass(frozen=True)
class Verdict:
    lesson: str
    key: str  # the claim's id in its lesson, kept when its sentence is reworded
    claim: str
    measured: float
    bound: str
    passed: bool
    detail: str = ""
    low: float | None = None  # the bounds as numbers (None: open on that side)
    high: float | None = None
    skipped: bool = False  # not checkable here (say, it needs two CPUs): stated, neither passed nor failed

    @property
    def margin(self) -> float:
        """How far inside its bounds the value sits (negative: outside), in the value's own units."""
        sides = [self.measured - self.low if self.low is not None else math.inf]
        sides.append(self.high - self.measured if self.high is not None else math.inf)
        return min(sides) if not math.isnan(self.measured) else math.nan

    def __str__(self) -> str:
        if self.skipped:
            return f"[SKIP] {self.claim}: {self.detail}"
        mark = "PASS" if self.passed else "FAIL"
        detail = f" — {self.detail}" if self.detail else ""
        return f"[{mark}] {self.claim}: measured {self.measured:.3g}, expected {self.bound}{detail}"


class Claims:
    """The claims of one lesson."""

    def __init__(self, lesson: str, strict: bool = False):
        self.lesson = lesson
        self.strict = strict
        self.verdicts: list[Verdict] = []

    def between(
        self, claim: str, value: float, low: float = -math.inf, high: float = math.inf, detail: str = "", *, key: str
    ) -> Verdict:
        """`value` lies in [low, high]; NaN never passes."""
        if low > -math.inf and high < math.inf:
            bound = f"between {low:.3g} and {high:.3g}"
        elif low > -math.inf:
            bound = f"≥ {low:.3g}"
        else:
            bound = f"≤ {high:.3g}"
        passed = bool(not math.isnan(value) and low <= value <= high)
        low_, high_ = (float(low) if low > -math.inf else None), (float(high) if high < math.inf else None)
        return self._record(Verdict(self.lesson, key, claim, float(value), bound, passed, detail, low_, high_))

    def ratio(
        self,
        claim: str,
        numerator: float,
        denominator: float,
        at_least: float = -math.inf,
        at_most: float = math.inf,
        detail: str = "",
        *,
        key: str,
    ) -> Verdict:
        """numerator / denominator lies in [at_least, at_most]."""
        value = numerator / denominator if denominator else math.nan
        detail = detail or f"{numerator:.4g} / {denominator:.4g}"
        return self.between(claim, value, at_least, at_most, detail, key=key)

    def near(
        self, claim: str, measured: float, predicted: float, tolerance: float, detail: str = "", *, key: str
    ) -> Verdict:
        """measured / predicted lies within 1 ± tolerance."""
        # the verdict's own "measured" is the ratio: the two it divides are named first, so neither reads as it
        both = f"that is {measured:.4g} against {predicted:.4g} predicted"
        detail = f"{both}; {detail}" if detail else both
        return self.ratio(claim, measured, predicted, 1 - tolerance, 1 + tolerance, detail, key=key)

    def valid(self, claim: str, frame: pd.DataFrame, *, key: str) -> Verdict:
        """Every run in `frame` is a valid measurement."""
        bad = frame[~frame["valid"].astype(bool)]
        detail = (
            "; ".join(f"{r.pattern} at {r.users} users: {r.problems}" for r in bad.itertuples()) or "all runs valid"
        )
        if "disturbed" in frame and (disturbed := int(frame["disturbed"].eq(True).sum())):
            # valid says the instrument measured the run; disturbed, that something else took CPU in its window
            detail += f" ({disturbed} of them disturbed by other programs: counted apart against their predictions)"
        share = 1 - len(bad) / len(frame) if len(frame) else math.nan
        return self.between(claim, share, 1.0, 1.0, detail, key=key)

    def needs_cpus(self, cpus_needed: float, claim: str, why: str, *, key: str) -> bool:
        """True if the lab may use `cpus_needed` CPUs here; else the claim is recorded as not shown, and why.

        `key` is the guarded claim's: the check it guards records under the same key.
        """
        self._check_key(key, claim)
        usable = cpus.cores()
        if usable >= cpus_needed:
            return True
        why = f"needs {cpus_needed:g} usable CPUs, this process may use {usable:g}: {why}"
        self.cannot_show(claim, why, key=key)
        return False

    def cannot_show(self, claim: str, why: str, *, key: str) -> Verdict:
        """Record `claim` as not shown by this run, and why: stated, neither passed nor failed."""
        return self._record(Verdict(self.lesson, key, claim, math.nan, "not shown here", True, why, skipped=True))

    def cannot_show_all(self, claims: Mapping[str, str], why: str) -> list[Verdict]:
        """Record each of `claims` (key: sentence) as not shown here, and why: a lesson that could not make its runs."""
        return [self.cannot_show(claim, why, key=key) for key, claim in claims.items()]

    def _check_key(self, key: str, claim: str) -> None:
        """Refuse, at the check that names it, a key that is not an id or that this lesson used for another claim.

        The same claim checked again (an instructor re-running the claims cell) replaces its verdict.
        """
        if not isinstance(key, str) or not KEY.fullmatch(key):
            raise ValueError(
                f"claim key {key!r} in {self.lesson} is not an id: lowercase letters, digits and hyphens, "
                "as in 'gather-3x'"
            )
        earlier = next((v for v in self.verdicts if v.key == key), None)
        if earlier is not None and earlier.claim != claim:
            raise ValueError(
                f"claim key {key!r} is used twice in {self.lesson}, first for {earlier.claim!r}: give each claim "
                "its own key"
            )

    def _record(self, verdict: Verdict) -> Verdict:
        self._check_key(verdict.key, verdict.claim)
        self.verdicts = [v for v in self.verdicts if v.key != verdict.key]  # a re-checked claim's latest verdict
        self.verdicts.append(verdict)
        print(verdict)
        path = config.CLAIMS_FILE.read()
        if path:
            with open(path, "a") as f:
                f.write(json.dumps(asdict(verdict)) + "\n")
        return verdict

    @property
    def failed(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.passed and not v.skipped]

    def report(self) -> pd.DataFrame:
        """All verdicts as a table; raises ClaimFailed if strict and any claim failed."""
        table = pd.DataFrame([asdict(v) for v in self.verdicts])
        if self.strict and self.failed:
            names = "; ".join(v.claim for v in self.failed)
            raise ClaimFailed(f"{len(self.failed)} of {len(self.verdicts)} claims failed in {self.lesson}: {names}")
        return table
