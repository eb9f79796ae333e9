"""Lambda code: one folder per function, a thin handler over pure logic and injected clients."""
