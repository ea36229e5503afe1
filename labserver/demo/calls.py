"""Lesson 12's calls to another service: where an endpoint finds it, and the app's one client's limit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import HTTPException, Request

if TYPE_CHECKING:  # the client is made in the lifespan (app.py); this module makes none
    import httpx

# The app's one client keeps up to httpx's default of 100 connections per worker, each kept open for the next
# call (by default, once the pool holds 20 connections, busy or idle, httpcore closes each one that goes idle, and
# later calls open new ones).
CLIENT_CONNECTIONS = 100
# ... and drops one left idle this long, well before the other service closes it (uvicorn: 5 s after its last reply).
# At httpx's default, 5 s, both ends close it at once, and a call sent on it as the other end closes fails; the later
# a busy event loop sends a call after its connection was chosen, the likelier that is.
IDLE_S = 2.0
_NONE = "this server was started without an upstream service to call"
# answered to any valid input by a server started without another service to call
RESPONSES = {503: {"description": _NONE}}


def upstream(request: Request) -> str:
    """The other service's URL; 503 where the server was started without one."""
    url = request.app.state.settings.upstream
    if not url:
        raise HTTPException(status_code=503, detail=_NONE)
    return url


def client(request: Request) -> httpx.AsyncClient:
    """The client the app made at start-up for every call to the other service; 503 where it has none."""
    made = request.app.state.client
    if made is None:
        raise HTTPException(status_code=503, detail=_NONE)
    return made
