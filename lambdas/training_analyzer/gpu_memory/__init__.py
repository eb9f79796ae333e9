"""GPU memory right-sizing: each job's peak and P95 of GPU memory used against its GPUs'
capacity; a finding where it risks running out, and a priced one where it fits a MIG profile."""
