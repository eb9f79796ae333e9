"""Reusable CDK constructs; each takes keyword-only typed arguments."""
