"""The demo server: what uvicorn workers and process-pool children import.

The app, one module per concurrency pattern, the work a request does, its query parameters,
the server's settings and the database lesson's routes. Nothing here imports the harness,
the theory or pandas: every worker and pool child pays for each import again.
"""
