"""One module reads the LAB_* environment (labserver/config.py): each setting has one name, default and meaning."""

import ast
import re
from pathlib import Path

import pytest

from labserver import config
from labserver.paths import LOCUSTFILES, ROOT

PACKAGE = ROOT / "labserver"
NAME = re.compile(r"LAB_[A-Z0-9_]+")


def _strings(tree: ast.Module) -> dict[str, str]:
    """The module's constants that hold a string, by name (`TARGETS_ENV = "LAB_..."`)."""
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def environ_keys(source: str) -> set[str]:
    """The keys `source` reads from (or writes to) os.environ or os.getenv, where a literal or a constant names them."""
    tree = ast.parse(source)
    strings = _strings(tree)

    def key(node: ast.expr | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return strings.get(node.id)
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            return node.values[0].value  # f"LAB_{x}": its fixed start
        return None

    keys = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_environ(node.value):
            keys.add(key(node.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            getenv = node.func.attr in ("getenv", "putenv", "unsetenv")
            if getenv or (_is_environ(node.func.value) and node.func.attr in ("get", "pop", "setdefault")):
                keys.add(key(node.args[0]))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getenv" and node.args:
            keys.add(key(node.args[0]))
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            keys.add(key(node.left))
    return {k for k in keys if k and k.startswith("LAB_")}


def _modules() -> list[Path]:
    """Every module of the lab but config.py: the package's, and the locustfiles', which import it too."""
    return sorted(p for p in [*PACKAGE.rglob("*.py"), *LOCUSTFILES.glob("*.py")] if p != PACKAGE / "config.py")


def _names(path: Path) -> set[str]:
    """The setting names `path` spells as a whole string: a key, a constant (a message naming one is fine)."""
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value)
    }


@pytest.mark.parametrize(
    "source",
    [
        'import os\nos.environ.get("LAB_X")',
        'import os\nos.environ["LAB_X"]',
        'import os\nos.getenv("LAB_X", "1")',
        'from os import environ\nenviron.get("LAB_X")',
        'import os\nKEY = "LAB_X"\nos.environ.get(KEY, "")',
        'import os\n"LAB_X" in os.environ',
        'import os\nos.environ.setdefault("LAB_X", "1")',
        'import os\nos.environ[f"LAB_{1}"]',
    ],
)
def test_a_read_of_the_environment_is_found(source):
    assert environ_keys(source) in ({"LAB_X"}, {"LAB_"})


def test_other_keys_and_other_dicts_are_not_reads():
    assert not environ_keys('import os\nos.environ.get("HOME")\nd = {}\nd.get("LAB_X")\nprint("LAB_X")')


def test_only_config_reads_the_lab_settings():
    stray = {path.relative_to(ROOT).as_posix(): environ_keys(path.read_text()) for path in _modules()}
    stray = {path: keys for path, keys in stray.items() if keys}
    assert not stray, f"read these through labserver/config.py (config.<SETTING>.read()): {stray}"


def test_no_other_module_spells_a_setting_name():
    # A bare "LAB_..." string outside config.py is a second home for the name (a key written, a constant).
    stray = {path.relative_to(ROOT).as_posix(): _names(path) for path in _modules()}
    stray = {path: names for path, names in stray.items() if names}
    assert not stray, f"name these by config.<SETTING>.name: {stray}"


def test_every_setting_is_listed_once_with_its_meaning():
    declared = [value for value in vars(config).values() if isinstance(value, config.Setting)]
    assert sorted(s.name for s in declared) == sorted(config.SETTINGS)
    for name, setting in config.SETTINGS.items():
        assert NAME.fullmatch(name) and setting.name == name and setting.meaning and setting.form


def _make_variables() -> set[str]:
    return set(re.findall(r"^(LAB_\w+)\s*[:?+]?=", (ROOT / "Makefile").read_text(), re.MULTILINE))


@pytest.mark.parametrize("doc", ["README.md", "data/README.md"])
def test_every_setting_the_docs_name_exists(doc):
    path = ROOT / doc
    named = set(NAME.findall(path.read_text())) if path.exists() else set()
    unknown = named - set(config.SETTINGS) - _make_variables()
    assert not unknown, f"{doc} names settings labserver/config.py does not hold: {unknown}"


def test_a_setting_is_read_when_asked_and_unset_or_empty_is_its_default(monkeypatch):
    monkeypatch.delenv("LAB_WORKERS", raising=False)
    assert config.WORKERS.read() == 1
    monkeypatch.setenv("LAB_WORKERS", "3")
    assert config.WORKERS.read() == 3
    monkeypatch.setenv("LAB_WORKERS", "")
    assert config.WORKERS.read() == 1


@pytest.mark.parametrize(
    ("setting", "value"),
    [(config.WORKERS, 4), (config.PROGRESS, False), (config.CPUS, (0, 2)), (config.QUEUE_LIMIT, 0),
     (config.QUEUE_LIMIT, None), (config.WORKER_TARGETS, ("a", "b")), (config.DATA_DIR, Path("/x"))],
)  # fmt: skip
def test_what_is_written_reads_back(monkeypatch, setting, value):
    monkeypatch.setenv(setting.name, setting.text(value))
    assert setting.read() == value


@pytest.mark.parametrize(
    ("setting", "text"), [(config.WORKERS, "two"), (config.LIVE_EVERY_S, "0"), (config.LIVE_EVERY_S, "nan")]
)
def test_a_value_that_does_not_parse_names_the_variable(monkeypatch, setting, text):
    monkeypatch.setenv(setting.name, text)
    with pytest.raises(ValueError, match=f"^{setting.name} must be {re.escape(setting.form)}, got {text!r}"):
        setting.read()
