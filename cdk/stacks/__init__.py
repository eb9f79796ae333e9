"""Stacks only wire constructs together from one Settings object."""
