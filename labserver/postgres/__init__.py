"""Lesson 07's integration: a private PostgreSQL cluster, the shop data and the runs against it."""
