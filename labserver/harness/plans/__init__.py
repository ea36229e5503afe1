"""What a plan of runs is: its stages and shared options, and what it has measured so far, as it runs."""
