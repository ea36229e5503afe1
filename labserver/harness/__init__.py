"""Start, drive and measure: owned processes, the server launcher, Locust plans, records and runs on disk.

The harness knows the demo server's settings and patterns and the model's predictions; it
knows no lesson and draws no chart.
"""
