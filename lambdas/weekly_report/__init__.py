"""The weekly report: what a team lead reads on Monday."""
