"""Routes the demo server answers beside the patterns, by name, importable without FastAPI or psycopg.

The harness checks a lesson's endpoint against these before anything starts, and the theory
prices each of them; `shop.py` serves them (a test keeps the two in step).
"""

# Lesson 07's database routes (shop.py), served when the server is given a database.
SHOP = ("sync_select", "async_select", "sync_simulation", "async_simulation")
