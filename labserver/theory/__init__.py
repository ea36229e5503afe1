"""What should happen: pure functions of the parameters and of costs measured where the work runs.

Little's law, the bottleneck law and mean-value analysis (`model`), the CPU a run measured per
request (`demand`), one worker's ceiling and the knee (`knee`), cores and the GIL (`cores`,
`gil`), what more `--workers` added (`workers`), timeouts behind a blocked loop (`timeouts`),
client strategies (`clients`) and database pools (`pools`). No module here starts a process or
opens a connection.
"""
