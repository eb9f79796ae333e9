"""Turns XID events in CloudWatch Logs into notifications a person can act on."""
