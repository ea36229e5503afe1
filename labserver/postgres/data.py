"""The shop data of Carlos Pena's k6 load test (users, products, orders, order_items), built in PostgreSQL at a scale.

Scale 1 is the article's size: 1M users, 100k products, 5M orders, 10M order items. Each scale
gets its own schema, `lab_shop_<scale>_<hash of the SQL below>`, built in one transaction
under a temporary name and renamed when complete: a half-built schema is never used, and a
built one is reused for as long as the SQL and the scale stay the same.

Tables are loaded first and their keys, foreign keys and indexes added afterwards (the usual
bulk-load order: the same schema as the article's, built several times faster).
"""

from __future__ import annotations

import hashlib
import sys
import time
from dataclasses import dataclass

from labserver import config

FULL_ROWS = {"users": 1_000_000, "products": 100_000, "orders": 5_000_000, "order_items": 10_000_000}
PREFIX = "lab_shop_"
STATUSES = ("pending", "paid", "cancelled", "refunded")
WORDS = (
    "Alpha",
    "Beta",
    "Gamma",
    "Delta",
    "Omega",
    "Nova",
    "Prime",
    "Ultra",
    "Max",
    "Lite",
    "Turbo",
    "Pro",
    "Plus",
    "Mini",
    "Smart",
    "Eco",
    "Power",
    "Magic",
    "Hyper",
    "Blue",
    "Red",
    "Green",
    "Black",
    "White",
    "Silver",
    "Gold",
    "Quantum",
    "Fusion",
)

TABLES = """
CREATE TABLE users (
    id          bigint NOT NULL,
    name        text NOT NULL,
    email       text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE products (
    id          bigint NOT NULL,
    title       text NOT NULL,
    unit_price  numeric(10, 2) NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE orders (
    id          bigint NOT NULL,
    user_id     bigint NOT NULL,
    status      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE order_items (
    id          bigint NOT NULL,
    order_id    bigint NOT NULL,
    product_id  bigint NOT NULL,
    quantity    integer NOT NULL CHECK (quantity > 0),
    unit_price  numeric(10, 2) NOT NULL,  -- the product's price when it was ordered
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE lab_meta (key text PRIMARY KEY, value text NOT NULL);
"""

# (step, SQL): %(users)s etc. are the row counts. random() follows setseed(), so a scale always
# gives the same rows. Items draw their order from every order (the article's generator drew from
# the first million only, leaving four fifths of its orders empty).
LOAD = [
    (
        "users",
        """
        INSERT INTO users (id, name, email, created_at)
        SELECT g, 'user_' || g, 'user_' || g || '@example.com', now() - random() * interval '365 days'
        FROM generate_series(1, %(users)s) AS g""",
    ),
    (
        "products",
        """
        INSERT INTO products (id, title, unit_price, created_at)
        SELECT g, w[1 + floor(random() * cardinality(w))::int] || ' ' || w[1 + floor(random() * cardinality(w))::int]
                  || ' ' || w[1 + floor(random() * cardinality(w))::int],
               round((random() * 500)::numeric, 2), now() - random() * interval '365 days'
        FROM generate_series(1, %(products)s) AS g, (SELECT %(words)s::text[] AS w) AS words""",
    ),
    (
        "orders",
        """
        INSERT INTO orders (id, user_id, status, created_at)
        SELECT g, 1 + floor(random() * %(users)s)::bigint, (%(statuses)s::text[])[1 + floor(random() * 4)::int],
               now() - random() * interval '365 days'
        FROM generate_series(1, %(orders)s) AS g""",
    ),
    (
        "order_items",
        """
        INSERT INTO order_items (id, order_id, product_id, quantity, unit_price, created_at)
        SELECT i.id, i.order_id, i.product_id, i.quantity, p.unit_price, now() - random() * interval '365 days'
        FROM (SELECT g AS id, 1 + floor(random() * %(orders)s)::bigint AS order_id,
                     1 + floor(random() * %(products)s)::bigint AS product_id, 1 + floor(random() * 5)::int AS quantity
              FROM generate_series(1, %(order_items)s) AS g) AS i
        JOIN products AS p ON p.id = i.product_id""",
    ),
    (
        "keys",
        """
        ALTER TABLE users ADD PRIMARY KEY (id), ADD UNIQUE (email);
        ALTER TABLE products ADD PRIMARY KEY (id);
        ALTER TABLE orders ADD PRIMARY KEY (id);
        ALTER TABLE order_items ADD PRIMARY KEY (id)""",
    ),
    (
        "foreign keys",
        """
        ALTER TABLE orders ADD CONSTRAINT fk_orders_user FOREIGN KEY (user_id) REFERENCES users (id);
        ALTER TABLE order_items
            ADD CONSTRAINT fk_order_items_order FOREIGN KEY (order_id) REFERENCES orders (id),
            ADD CONSTRAINT fk_order_items_product FOREIGN KEY (product_id) REFERENCES products (id)""",
    ),
    (
        "indexes",
        """
        CREATE INDEX idx_orders_user_id ON orders (user_id);
        CREATE INDEX idx_order_items_order_id ON order_items (order_id);
        CREATE INDEX idx_order_items_product_id ON order_items (product_id);
        CREATE INDEX idx_order_items_order_product ON order_items (order_id, product_id)""",
    ),
]
SIZE = """SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = %s AND c.relkind = 'r'"""  # tables with their indexes and TOAST
SCHEMA_HASH = hashlib.sha256((TABLES + repr(LOAD) + repr(WORDS)).encode()).hexdigest()[:8]


def rows(scale: float) -> dict[str, int]:
    """Row counts at `scale` (1 = Carlos Pena's full shop); at least a few rows of each."""
    if not 0 < scale <= 1:
        raise ValueError(f"scale must be above 0 and at most 1 (Carlos Pena's full shop), got {scale!r}")
    return {table: max(10, round(n * scale)) for table, n in FULL_ROWS.items()}


def schema_name(scale: float) -> str:
    tag = f"{scale:g}".replace(".", "_").replace("-", "m")
    return f"{PREFIX}{tag}_{SCHEMA_HASH}"


@dataclass(frozen=True)
class Shop:
    """A built data set: where it is, how big, and how long it took to build."""

    url: str  # the server's URL
    schema: str
    scale: float
    rows: dict
    size_mb: float
    build_s: float  # time of the build that made it (earlier, if it was reused)
    built_now: bool

    @property
    def conninfo(self) -> str:
        """Connection string that finds the shop's tables without a schema prefix."""
        from psycopg.conninfo import make_conninfo

        return make_conninfo(self.url, options=f"-c search_path={self.schema}")

    def __str__(self) -> str:
        counts = ", ".join(f"{n:,} {t}" for t, n in self.rows.items())
        how = f"built in {self.build_s:.1f} s" if self.built_now else f"reused (built earlier in {self.build_s:.1f} s)"
        return f"{self.schema}: {counts}; {self.size_mb:,.0f} MB; {how}"


def ensure(url: str, scale: float, progress: bool | None = None) -> Shop:
    """The shop at `scale` on the server at `url`: reused if already built with this SQL, else built now.

    A progress bar shows the build unless `progress` is False (default: on, but for LAB_PROGRESS=0).
    """
    import psycopg

    progress = config.PROGRESS.read() if progress is None else progress

    counts = rows(scale)
    schema = schema_name(scale)
    with psycopg.connect(url, autocommit=True) as conn:
        # one builder at a time per server (two notebooks, or a notebook and a batch)
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", [PREFIX])
        try:
            _drop_outdated(conn)
            built_now = not _exists(conn, schema)
            if built_now:
                _build(conn, schema, counts, progress)
            meta: dict[str, str] = dict(conn.execute(f"SELECT key, value FROM {schema}.lab_meta").fetchall())
            size = conn.execute(SIZE, [schema]).fetchall()[0][0]  # an aggregate: one row
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", [PREFIX])
    return Shop(
        url=url,
        schema=schema,
        scale=scale,
        rows=counts,
        size_mb=int(size) / 2**20,
        build_s=float(meta["build_s"]),
        built_now=built_now,
    )


def _exists(conn, schema: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema]).fetchone() is not None


def _drop_outdated(conn) -> None:
    """Drop shops built by other versions of this SQL, and any build cut off half-way."""
    names = [r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", [PREFIX + "%"])]
    for name in names:
        if not name.endswith("_" + SCHEMA_HASH):
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')


def _build(conn, schema: str, counts: dict[str, int], progress: bool) -> None:
    # plain text, in a terminal and in a notebook alike: tqdm.auto's notebook bar needs ipywidgets,
    # and warns without it
    from tqdm.std import tqdm

    values = {**counts, "words": list(WORDS), "statuses": list(STATUSES)}
    building = f"{schema}_building"
    started = time.perf_counter()
    steps = [("tables", TABLES), *LOAD]
    with tqdm(
        total=len(steps) + 1, desc=f"building {schema}", unit="step", disable=not progress, file=sys.stdout
    ) as bar:
        with conn.transaction():
            conn.execute(f'DROP SCHEMA IF EXISTS "{building}" CASCADE')
            conn.execute(f'CREATE SCHEMA "{building}"')
            conn.execute(f'SET LOCAL search_path = "{building}"')
            conn.execute("SELECT setseed(0.42)")
            for step, sql in steps:
                bar.set_postfix_str(step)
                conn.execute(sql if step == "tables" else sql % _literals(values))
                bar.update()
            conn.execute(
                "INSERT INTO lab_meta VALUES ('scale_rows', %s), ('build_s', %s)",
                [repr(counts), f"{time.perf_counter() - started:.2f}"],
            )
            conn.execute(f'ALTER SCHEMA "{building}" RENAME TO "{schema}"')
        bar.set_postfix_str("vacuum analyze")
        for table in ("users", "products", "orders", "order_items"):
            conn.execute(f'VACUUM ANALYZE "{schema}".{table}')  # planner statistics and index-only scans
        bar.update()
    build_s = time.perf_counter() - started
    conn.execute(f"UPDATE \"{schema}\".lab_meta SET value = '{build_s:.2f}' WHERE key = 'build_s'")


def _literals(values: dict) -> dict:
    """SQL literals for the generator's parameters (several statements per step rule out server-side binding)."""
    out = {}
    for key, value in values.items():
        if isinstance(value, list):
            out[key] = "ARRAY[" + ", ".join("'" + v.replace("'", "''") + "'" for v in value) + "]"
        else:
            out[key] = str(int(value))
    return out
