"""Finds the GPUs that should report and do not: the silence no alarm on their own data sees."""
