"""A plan run to its end: Locust's processes, the run loop, and each run priced and foreseen before it starts."""
