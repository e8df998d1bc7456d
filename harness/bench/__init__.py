"""Benchmarks behind ``harness bench``: each prints ours-vs-baseline side by side in one run.

server.py     fault server throughput and pacing
watchdog.py   deadline detection latency: the reference watchdog vs a join(timeout=0.3) poller
netem.py      kernel network faults
common.py     figures they share (the nearest-rank percentile)
"""
