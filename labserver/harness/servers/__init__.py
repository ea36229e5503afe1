"""The lab server: uvicorn in the background, on this machine's loopback, on a Python of its own, pinned or remote."""
