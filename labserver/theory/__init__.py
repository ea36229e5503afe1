"""What should happen, before anything runs: pure functions of the parameters and measured costs.

Little's law and the bottleneck law (`model`), cores and the GIL (`cores`), timeouts behind a
blocked loop (`timeouts`), client strategies (`clients`) and database pools (`pools`). No
module here starts a process or opens a connection.
"""
