"""The oma-host benchmark harness: run it with ``python3 bench/run.py``."""
