"""`python -m labserver.postgres --scale 0.01`: lesson 07's PostgreSQL alone, until Ctrl-C (`make db`)."""

from labserver.postgres.database import main

main()
