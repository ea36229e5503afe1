"""The README's "package, by room" map names every module of the package: a module added or renamed shows there."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "labserver"


def _rooms(readme: str | None = None) -> dict[str, str]:
    """The map's text for each room: a subpackage ("course/"), or a top-level module ("checks")."""
    readme = (ROOT / "README.md").read_text() if readme is None else readme
    block = readme.split("## The package, by room", 1)[1].split("```", 2)[1]
    rooms: dict[str, str] = {}
    room = None
    for line in block.splitlines():
        named = re.match(r"  (\S+)\s", line + " ")
        if named and not line.startswith("   "):
            room = named.group(1)
            rooms[room] = line[len(named.group(0)) :]
        elif room is not None:
            rooms[room] += " " + line.strip()
    return rooms


def _modules(folder: Path) -> set[str]:
    """What a room holds: its modules (`__main__` included) and its subpackages (`bench/`)."""
    found = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    found |= {f"{p.parent.name}/" for p in folder.glob("*/__init__.py")}
    return found


def _named(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*/?", text))


def test_every_room_of_the_package_is_on_the_map():
    rooms = _rooms()
    want = {f"{p.parent.name}/" for p in PACKAGE.glob("*/__init__.py")}
    want |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert want <= set(rooms), f"the README's map lacks {sorted(want - set(rooms))}"
    assert set(rooms) <= want, f"the README's map names rooms that are gone: {set(rooms) - want}"


def test_every_module_is_named_in_its_room():
    rooms = _rooms()
    for room, text in rooms.items():
        if not room.endswith("/"):
            continue
        missing = _modules(PACKAGE / room.rstrip("/")) - _named(text)
        assert not missing, f"the README's map of labserver/{room} does not name {sorted(missing)}"


def test_a_module_left_off_the_map_is_found():
    block = "labserver/\n  harness/   load (run_plan, sweep),\n             plan\n  paths      where\n"
    rooms = _rooms(f"## The package, by room\n\n```\n{block}```\n")
    assert set(rooms) == {"harness/", "paths"}
    assert {"load", "plan", "pricing"} - _named(rooms["harness/"]) == {"pricing"}
