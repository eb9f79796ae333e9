"""Alarm definitions as data, and the CloudWatch evaluation rules to replay history through them.

The CDK app deploys exactly these definitions and ``gpu-insights backtest`` evaluates exactly
these definitions: one source of truth, so a backtest says what the deployed alarm would do.
"""
