import math

from labserver.theory import usl


def test_the_fit_recovers_the_laws_own_curve():
    law = usl.Fit(lam=100.0, sigma=0.05, kappa=0.001)
    users = [1, 2, 4, 8, 16, 32, 64]
    fit = usl.fit(users, [law.rps(n) for n in users])
    assert math.isclose(fit.sigma, 0.05, rel_tol=1e-6) and math.isclose(fit.kappa, 0.001, rel_tol=1e-6)
    assert math.isclose(fit.peak_users, math.sqrt(0.95 / 0.001), rel_tol=1e-6)


def test_a_straight_line_has_no_peak_and_three_runs_no_fit():
    fit = usl.fit([1, 2, 4, 8], [20, 40, 80, 160])  # each user alone: no contention, no coherency
    assert abs(fit.sigma) < 1e-9 and abs(fit.kappa) < 1e-9 and fit.peak_users > 1e4  # no bend in reach
    assert math.isnan(usl.fit([1, 2, 4], [140, 176, 183]).lam)  # three figures would pass through any three runs
