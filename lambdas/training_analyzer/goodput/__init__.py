"""Goodput: where each training job's GPU-time went, productive steps and badput by cause."""
