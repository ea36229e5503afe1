"""The routes of `python -m labserver measure`, as a user types them: checked before anything starts."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from labserver import protocol

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_AT_LEAST = re.compile(r"^(?P<route>.+?)\s*=\s*(?P<rps>[0-9]+(\.[0-9]+)?)$")


def parse(text: str, headers: Mapping[str, str] = {}, folder: Path | None = None) -> protocol.Route:
    """A route from `"GET /items?limit=20"` or `"POST /orders @order.json"` (the body read from that file, in
    `folder`), sent with `headers`. A ValueError names what to change."""
    parts = text.split()
    if len(parts) not in (2, 3):
        raise ValueError(f'a route is "METHOD /path" or "METHOD /path @body-file", got {text!r}')
    method, path = parts[0].upper(), parts[1]
    if method not in METHODS:
        raise ValueError(f"a route's method is one of {', '.join(METHODS)}, got {parts[0]!r} in {text!r}")
    if not path.startswith("/"):
        raise ValueError(f"a route's path starts with /, got {path!r} in {text!r}")
    route = protocol.Route(method=method, path=path, label=f"{method} {path}")
    sent = dict(headers)
    if len(parts) == 3:
        if not parts[2].startswith("@"):
            raise ValueError(f"a route's body is named @file, got {parts[2]!r} in {text!r}")
        body_path = (folder or Path.cwd()) / parts[2][1:]
        try:
            route["body"] = body_path.read_text()
        except OSError as e:
            raise ValueError(f"cannot read the body of {text!r} from {body_path}: {e.strerror or e}") from e
        if body_path.suffix == ".json" and not any(k.lower() == "content-type" for k in sent):
            sent["Content-Type"] = "application/json"
    if sent:
        route["headers"] = sent
    return route


def headers(given: Iterable[str]) -> dict[str, str]:
    """`--header "Name: value"` options as a dict."""
    return _pairs(given, ":", lambda name: bool(name.strip()), 'a header is "Name: value"', strip=True)


def env(given: Iterable[str]) -> dict[str, str]:
    """`--env NAME=value` options, for the app's processes, as a dict."""
    return _pairs(given, "=", str.isidentifier, "an --env is NAME=value")


def _pairs(given: Iterable[str], sep: str, named: Callable[[str], bool], form: str, strip: bool = False) -> dict:
    """Options of the form NAME<sep>value as a dict; one without `sep`, or whose name fails `named`, a ValueError
    that says the form."""
    found = {}
    for text in given:
        name, split, value = text.partition(sep)
        if not split or not named(name):
            raise ValueError(f"{form}, got {text!r}")
        found[name.strip() if strip else name] = value.strip() if strip else value
    return found


def at_least(given: Iterable[str], labels: Iterable[str]) -> dict[str, float]:
    """`--at-least "GET /items=300"` options: the req/s each named route must reach, predicted and measured."""
    return _figures(given, labels, "--at-least", "REQ_PER_S")


def mix(given: str | None, labels: Iterable[str]) -> dict[str, float]:
    """`--mix "GET /items=8,POST /orders=2"`: each named route's share of the requests, summing to 1 (none: {})."""
    if not given:
        return {}
    weights = _figures([part for part in given.split(",") if part.strip()], labels, "--mix", "WEIGHT")
    total = sum(weights.values())
    if total <= 0 or min(weights.values()) < 0:
        raise ValueError(f"--mix weights are numbers ≥ 0, at least one above 0, got {given!r}")
    return {label: w / total for label, w in weights.items()}


def _figures(given: Iterable[str], labels: Iterable[str], option: str, figure: str) -> dict[str, float]:
    known = list(labels)
    found = {}
    for text in given:
        m = _AT_LEAST.match(text.strip())
        if m is None:
            raise ValueError(f'{option} is "METHOD /path={figure}", got {text!r}')
        method, _, path = m["route"].strip().partition(" ")
        label = f"{method.upper()} {path.strip()}"
        if label not in known:
            raise ValueError(f"{option} names {label!r}, which is not one of the routes measured: {known}")
        found[label] = float(m["rps"])
    return found


def describe(route: protocol.Route) -> str:
    """The route as a report names it, its body's size beside it."""
    body = route.get("body")
    return route["label"] + (f" ({len(body.encode())} B body)" if body is not None else "")
