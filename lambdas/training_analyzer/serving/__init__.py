"""A day of inference serving: the servers' series read with PromQL (promql.py) and the pure
analysis of them beside the GPU-hour attribution (analysis.py): the serving table and its
findings."""
