"""environment.yml, pyproject.toml and constraints.txt pin the same versions."""

import re
import tomllib

import yaml

from labserver.paths import ROOT

PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*([^\s;#]+)")


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503: names compare normalized


def _pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        m = PIN.match(line)
        if m:
            pins[_name(m.group(1))] = m.group(3)
    return pins


def pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = [*project["dependencies"], *(d for extra in project["optional-dependencies"].values() for d in extra)]
    unpinned = [d for d in deps if not PIN.match(d)]
    assert not unpinned, f"every dependency in pyproject.toml must be pinned with ==: {unpinned}"
    return _pins(deps)


def environment_pins() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    return _pins(p for p in pip if not p.startswith("-"))


def test_environment_yml_has_the_pins_of_pyproject():
    assert environment_pins() == pyproject_pins()


def test_constraints_pin_the_same_versions():
    constraints = _pins((ROOT / "constraints.txt").read_text().splitlines())
    for name, version in pyproject_pins().items():
        assert name in constraints, f"{name} is pinned in pyproject.toml but missing from constraints.txt"
        pinned = constraints[name]
        assert pinned == version, f"{name}: pyproject.toml pins {version}, constraints.txt {pinned}"


def test_environment_yml_names_the_kernel_and_python():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["name"] == "concurrency-lab"
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    version = tuple(int(x) for x in python.split("=")[-1].split("."))
    assert version >= tuple(int(x) for x in requires.removeprefix(">=").split("."))
