"""What a run measured: Locust's records read, collected into a row, and saved as a folder of its own."""
