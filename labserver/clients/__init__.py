"""Lesson 06's integration: three Python clients (`requests` in a loop, a thread pool, aiohttp), each
in its own process, measured against the demo server."""
