"""CloudWatch Logs filter patterns built from names that come from outside (a job's name)."""


def quote_term(value: str) -> str:
    """``value`` as one quoted term of a filter pattern (a JSON pattern's string value): in
    double quotes, each backslash and double quote escaped with a backslash, as AWS's own CDK
    writes a term (aws/aws-cdk, packages/aws-cdk-lib/aws-logs/lib/pattern.ts ``quoteTerm``:
    "Inner double quotes are escaped using a backslash"), so a name holding ``"`` neither ends
    the term early nor makes the pattern one the API refuses ("Invalid filter pattern")."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
