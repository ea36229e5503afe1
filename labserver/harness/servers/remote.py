"""A lab server the lab did not start: `python -m labserver serve` on this machine or another.

`RemoteServer(url)` measures it wherever the harness takes a LabServer (run_plan, sweep, the
live view). It takes only an address the user names, `http://host:port`, and follows no
redirect and no proxy to another. Before any load it reads the server's /info: the settings the
model needs (workers, threads, procs, queue_limit) and its protocol, which must be this lab's.
It never starts or stops that server: `alive` asks /health, `stop` lets go of nothing. Its CPU
comes from the server itself (/info's `cpu`, meters.RemoteCpuMeter): psutil cannot see another
machine.
"""

from __future__ import annotations

import ipaddress
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from http.client import HTTPMessage
from typing import IO, NoReturn

from labserver.demo import cpus
from labserver.demo.app import BOOT_ID, PROTOCOL, VERSION
from labserver.demo.settings import Settings
from labserver.harness.processes.meters import RemoteCpuMeter
from labserver.harness.servers.server import Server, ServerError

HEALTH_TIMEOUT_S = 2.0
# A server that holds every request (lesson 05's blocking loop) answers /health late, not never:
# only after this long without an answer, or at once when nothing listens, is it counted dead.
SILENT_S = 30.0
# The settings /info must report; the model needs each of them.
SETTINGS = ("workers", "threads", "procs", "queue_limit")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> NoReturn:
        why = f"redirect to {newurl} refused: the lab sends only to the address it was given"
        raise urllib.error.HTTPError(req.full_url, code, why, headers, fp)


# No proxy either (an http_proxy in the environment would carry the requests elsewhere).
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)


def check_url(url: str) -> str:
    """`url` as `http://host:port` if it is exactly that; ValueError saying what to write otherwise."""
    example = "http://192.168.1.20:8000"
    if not isinstance(url, str):
        raise ValueError(f"the server's address must be a string such as {example!r}, got {url!r}")
    parts = urllib.parse.urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or not parts.hostname or port is None:
        raise ValueError(f"the server's address must be http://host:port, port included, such as {example!r}: {url!r}")
    if parts.username or parts.password or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"the server's address is http://host:port and nothing more (no user, path, query): {url!r}")
    host = parts.hostname
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None  # a name, such as a classroom machine's
    if address is not None and address.is_unspecified:
        raise ValueError(f"{host} is where a server listens, not an address to send to: name the server's machine")
    return f"http://[{host}]:{port}" if address is not None and address.version == 6 else f"http://{host}:{port}"


def check_info(info: object, url: str) -> Settings:
    """The settings a lab server's /info reports; ServerError naming both sides if this lab cannot measure it."""
    if not isinstance(info, dict) or "patterns" not in info:
        raise ServerError(f"{url} is not a lab server: its /info does not answer as `python -m labserver serve` does")
    theirs = info.get("protocol")
    if theirs != PROTOCOL:
        raise ServerError(
            f"{url} is a lab server of another version: it speaks protocol {theirs or 'older than 1'} "
            f"(concurrency-lab {info.get('version', 'unknown')}), this lab speaks protocol {PROTOCOL} "
            f"(concurrency-lab {VERSION}); run the same version of the lab on both machines"
        )
    missing = [k for k in SETTINGS if k not in info]
    if missing:
        raise ServerError(f"{url}'s /info lacks {', '.join(missing)}: the model needs them")
    settings = Settings(**{k: info[k] for k in SETTINGS})
    try:
        settings.check()
    except ValueError as e:
        raise ServerError(f"{url} reports settings this lab cannot model: {e}") from None
    return settings


class RemoteServer(Server):
    """A lab server running elsewhere, at `url` (http://host:port): measured as a LabServer, never started or stopped.

    Reads /info at once (ServerError if nothing answers, or not a lab server of this lab's
    protocol) and again before each plan's load. `settings` are the server's; `usable_cpus`
    the CPUs its workers may run on (as the server saw them); `same_machine` whether it runs on
    this machine's kernel (a network namespace included), so that its CPU is inside this machine's.
    """

    def __init__(self, url: str, silent_s: float = SILENT_S):
        self._url = check_url(url)
        self.silent_s = silent_s
        self._answered = -float("inf")
        self.settings = self._read_settings()

    @property
    def url(self) -> str:
        return self._url

    def _read_settings(self) -> Settings:
        try:
            info = self.info()
        except (OSError, ValueError) as e:
            raise ServerError(
                f"no lab server answers at {self.url} ({e}): start it there with `python -m labserver serve --host "
                "ADDRESS --port PORT`, and check that this machine may reach that port"
            ) from None
        self.usable_cpus = list(info.get("cpus") or [])
        self.same_machine = BOOT_ID is not None and info.get("boot_id") == BOOT_ID
        return check_info(info, self.url)

    def cores(self) -> float:
        """The CPUs its workers may use, as it reported them (this machine's, when it shares its kernel)."""
        return cpus.cores() if self.same_machine or not self.usable_cpus else len(self.usable_cpus)

    def check_ready(self) -> None:
        """Before any load: the same lab server, still with the settings it had when attached."""
        settings = self._read_settings()
        if settings != self.settings:
            raise ServerError(
                f"the server at {self.url} changed its settings since it was attached ({self.settings} then, "
                f"{settings} now): attach it again, RemoteServer({self.url!r}), so that the model uses the new ones"
            )

    @property
    def alive(self) -> bool:
        try:
            ok = self.get("/health", timeout=HEALTH_TIMEOUT_S).get("status") == "ok"
        except (OSError, ValueError, AttributeError) as e:
            slow = isinstance(e, TimeoutError) or isinstance(getattr(e, "reason", None), TimeoutError)
            return slow and time.monotonic() - self._answered < self.silent_s
        if ok:
            self._answered = time.monotonic()
        return ok

    def get(self, path: str, timeout: float = 5.0) -> dict:
        with _OPENER.open(self.url + path, timeout=timeout) as response:
            return json.loads(response.read())

    def meter(self) -> RemoteCpuMeter:
        return RemoteCpuMeter(lambda: self.get("/info", timeout=HEALTH_TIMEOUT_S))

    def log_tail(self, lines: int = 30) -> str:
        return f"(the server at {self.url} was not started by the lab: its log is where it runs)"

    def start(self) -> RemoteServer:
        """Check it can be measured (it runs already: the lab never starts it)."""
        self.check_ready()
        return self

    def stop(self) -> None:
        """Nothing: the lab never stops a server it did not start."""

    def __enter__(self) -> RemoteServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        s = self.settings
        return f"RemoteServer({self.url}, workers={s.workers}, threads={s.threads}, procs={s.procs})"
