"""Child processes that never outlive their owner, their watch, their CPU, and the machine's pauses."""
