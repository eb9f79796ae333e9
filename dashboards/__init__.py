"""CloudWatch dashboards as code: pure functions that return dashboard bodies."""
