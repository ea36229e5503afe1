"""Start, drive and measure, in five layers, each importing only those below it.

- `load/`: a plan run to its end: Locust's processes, the run loop, each run priced before it starts;
- `rows/`: what a run measured, from Locust's records to its row and its folder on disk;
- `plans/`: what a plan is: its stages, the options they share, and its live feed;
- `servers/`: the lab server, started in the background or found running;
- `processes/`: child processes that never outlive their owner, and their CPU.

The harness knows the demo server's settings and patterns and the model's predictions; it
knows no lesson and draws no chart.
"""
