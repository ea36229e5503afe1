"""The Universal Scalability Law fitted to a sweep of closed-loop users, for readers who plan capacity with it.

Gunther's law says N users serve X(N) = λN / (1 + σ(N − 1) + κN(N − 1)): λ is one user's
throughput, σ the share of each request that waits its turn (contention), κ the cost of each pair
of requests in flight keeping each other in step (coherency). With κ > 0 the curve peaks at
N* = √((1 − σ) / κ) users and falls past it; with κ = 0 it flattens at λ / σ. It names no resource:
the lab's model does, and the sweep's telemetry says which of the two the data support.

The fit is linear, as Gunther fits it: N / X(N) = 1/λ + (σ/λ)(N − 1) + (κ/λ)N(N − 1), least squares
over the runs, σ and κ held at 0 where the free fit makes them negative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fit:
    """λ (req/s of one user), σ and κ, and the curve's peak: where it stops rising, and what it serves there."""

    lam: float
    sigma: float
    kappa: float

    @property
    def peak_users(self) -> float:
        """N*, the users where the curve peaks (inf: it flattens, κ = 0; NaN: no fit)."""
        if not math.isfinite(self.kappa):
            return math.nan
        return math.sqrt(max(0.0, 1 - self.sigma) / self.kappa) if self.kappa > 0 else math.inf

    @property
    def peak_rps(self) -> float:
        """The most the curve serves: X(N*), or λ / σ where it only flattens (inf: neither, a straight line)."""
        n = self.peak_users
        if math.isinf(n):
            return self.lam / self.sigma if self.sigma > 0 else math.inf
        return self.rps(n)

    def rps(self, users: float) -> float:
        return self.lam * users / (1 + self.sigma * (users - 1) + self.kappa * users * (users - 1))


NO_FIT = Fit(math.nan, math.nan, math.nan)


def fit(users: list[float], rps: list[float]) -> Fit:
    """The law fitted to runs of `users` closed-loop users that served `rps` each; NO_FIT under four runs with
    different users (three figures through three points would fit any three runs exactly)."""
    n, x = np.asarray(users, dtype=float), np.asarray(rps, dtype=float)
    keep = (n > 0) & (x > 0)
    n, x = n[keep], x[keep]
    if len(set(n.tolist())) < 4:
        return NO_FIT
    terms = {"sigma": n - 1, "kappa": n * (n - 1)}
    while True:
        design = np.column_stack([np.ones_like(n), *terms.values()])
        coef, *_ = np.linalg.lstsq(design, n / x, rcond=None)
        found = dict(zip(terms, coef[1:], strict=True))
        negative = [name for name, value in found.items() if value < 0]
        if not negative or coef[0] <= 0:
            break
        del terms[negative[-1]]  # κ first: a curve that does not fall has none
    if coef[0] <= 0:
        return NO_FIT
    lam = float(1 / coef[0])
    return Fit(lam=lam, sigma=float(found.get("sigma", 0.0) * lam), kappa=float(found.get("kappa", 0.0) * lam))
