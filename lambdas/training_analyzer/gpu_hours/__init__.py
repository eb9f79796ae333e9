"""The GPU analyzer: every GPU-hour classified (not held, working, held but not working, lost)
and attributed to namespace, pod and job; a priced finding per job that held GPUs idle."""
