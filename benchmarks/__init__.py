"""Benchmarks: scripts that print figures. `make bench` runs them; `make test` does not."""
