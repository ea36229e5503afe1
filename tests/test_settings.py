import pytest

from labserver.settings import PROCS_MAX, THREADS_DEFAULT, THREADS_MAX, WORKERS_MAX, Settings


def test_defaults_are_valid():
    s = Settings()
    s.check()
    assert (s.workers, s.threads) == (1, THREADS_DEFAULT)


def test_environment_round_trip(monkeypatch):
    s = Settings(workers=2, threads=12, procs=3)
    for key, value in s.to_env().items():
        monkeypatch.setenv(key, value)
    assert Settings.from_env() == s


def test_from_env_falls_back_to_defaults(monkeypatch):
    for key in ("LAB_WORKERS", "LAB_THREADS", "LAB_PROCS"):
        monkeypatch.delenv(key, raising=False)
    assert Settings.from_env() == Settings()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"workers": 0}, "workers"),
        ({"workers": WORKERS_MAX + 1}, "workers"),
        ({"workers": 1.5}, "workers"),
        ({"threads": 0}, "threads"),
        ({"threads": THREADS_MAX + 1}, "threads"),
        ({"procs": -1}, "procs"),
        ({"procs": PROCS_MAX + 1}, "procs"),
        ({"procs": "2"}, "procs"),
    ],
)
def test_check_names_the_setting(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} must be") as e:
        Settings(**kwargs).check()
    assert repr(next(iter(kwargs.values()))) in str(e.value)


def test_procs_zero_is_allowed():
    Settings(procs=0).check()
