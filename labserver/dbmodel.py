"""Theory for lesson 07's database endpoints (seed 001): which pool bounds each, and where CPU takes over.

Kept free of FastAPI and psycopg imports: the harness (load.py) reads `ENDPOINTS` from here.
"""

from __future__ import annotations

ENDPOINTS = ("sync_select", "async_select", "sync_simulation", "async_simulation")
