"""Goodput: where every GPU-hour went."""
