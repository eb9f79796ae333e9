"""What AWS accepts for the values a user types into settings: schedules, email and HTTPS
subscription endpoints, ARNs. Each check returns ``None`` for a good value, or a short reason
that the settings' one-line error carries, so a bad value stops synth instead of a deploy.
"""

import difflib
import functools
import re
from typing import Final
from urllib.parse import urlsplit

# EventBridge scheduled rules: "rate(value unit)" and "cron(6 fields)".
# https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rate-expressions.html
# https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html
_RATE: Final = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")
_CRON: Final = re.compile(r"cron\(([^()]*)\)")
_MONTHS: Final = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN")
_MONTHS_ALL: Final = (*_MONTHS, "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS: Final = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_CRON_SHAPE: Final = "cron(minutes hours day-of-month month day-of-week year)"


def schedule_problem(expression: str) -> str | None:
    """Why EventBridge would refuse this schedule expression, or None."""
    rate = _RATE.fullmatch(expression)
    if rate:
        value, unit = int(rate.group(1)), rate.group(2)
        if value < 1:
            return "a rate of at least 1"
        if (value == 1) == unit.endswith("s"):
            return "a singular unit for 1 and a plural one above, such as rate(1 day), rate(2 days)"
        return None
    cron = _CRON.fullmatch(expression)
    if not cron:
        return f"rate(value unit) or {_CRON_SHAPE}"
    return _cron_problem(cron.group(1).split())


def _cron_problem(fields: list[str]) -> str | None:
    if len(fields) != 6:
        return f"6 fields in {_CRON_SHAPE}, not {len(fields)}"
    minutes, hours, day_of_month, month, day_of_week, year = fields
    checks = (
        ("minutes", minutes, _cron_field(minutes, 0, 59, (), "")),
        ("hours", hours, _cron_field(hours, 0, 23, (), "")),
        ("day-of-month", day_of_month, _cron_field(day_of_month, 1, 31, (), "?LW")),
        ("month", month, _cron_field(month, 1, 12, _MONTHS_ALL, "")),
        ("day-of-week", day_of_week, _cron_field(day_of_week, 1, 7, _DAYS, "?L#")),
        ("year", year, _cron_field(year, 1970, 2199, (), "")),
    )
    for name, value, ok in checks:
        if not ok:
            return f"a valid cron {name} field, not {value!r}"
    # "You can't specify the Day-of-month and Day-of-week fields in the same cron expression.
    # If you specify a value or a * (asterisk) in one of the fields, you must use a ? in the
    # other."
    if (day_of_month == "?") == (day_of_week == "?"):
        return "'?' in exactly one of day-of-month and day-of-week"
    return None


def _cron_field(field: str, low: int, high: int, names: tuple[str, ...], extra: str) -> bool:
    """One cron field: ``*``, ``?`` (where allowed), or a comma list of values, ranges and
    ``/`` increments, with ``L``, ``W`` and ``#`` where the field allows them."""
    if field == "*" or (field == "?" and "?" in extra):
        return True
    if field == "L" and "L" in extra:
        return True
    if "#" in field:
        weekday, _, nth = field.partition("#")
        return "#" in extra and _value(weekday, low, high, names) and nth in set("12345")
    for part in field.split(","):
        base, slash, step = part.partition("/")
        if slash and not (step.isdigit() and int(step) >= 1):
            return False
        if base == "*" and slash:
            continue
        if "W" in extra and base.endswith("W") and _value(base[:-1], low, high, names):
            continue
        if "L" in extra and base.endswith("L") and _value(base[:-1], low, high, names):
            continue
        start, dash, end = base.partition("-")
        if not _value(start, low, high, names) or (dash and not _value(end, low, high, names)):
            return False
    return True


def _value(text: str, low: int, high: int, names: tuple[str, ...]) -> bool:
    if text.upper() in names:
        return True
    return text.isdigit() and low <= int(text) <= high


# SNS email subscriptions deliver to an address of at most 254 characters with a local part of
# at most 64 (RFC 5321, section 4.5.3.1); a domain is dot-separated labels of letters, digits
# and hyphens that neither start nor end with a hyphen.
_LOCAL: Final = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*")
_LABEL: Final = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def email_problem(address: str) -> str | None:
    local, at, domain = address.rpartition("@")
    if not at or not _LOCAL.fullmatch(local) or len(local) > 64 or len(address) > 254:
        return "email addresses such as ops@example.com"
    return None if _domain_ok(domain) else "email addresses with a domain such as example.com"


def _domain_ok(domain: str) -> bool:
    labels = domain.split(".")
    return (
        len(labels) >= 2
        and all(_LABEL.fullmatch(label) for label in labels)
        and not labels[-1].isdigit()
    )


def https_problem(url: str) -> str | None:
    """SNS delivers an ``https`` subscription to a URL "beginning with https://"; the host must
    be a DNS name a notification can reach.
    https://docs.aws.amazon.com/sns/latest/api/API_Subscribe.html"""
    if any(char.isspace() for char in url):
        return "https:// URLs without spaces"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "https:// URLs with a valid host and port"
    if parts.scheme != "https" or not parts.hostname:
        return "https:// URLs such as https://events.pagerduty.com/integration/KEY/enqueue"
    if port == 0 or not (_domain_ok(parts.hostname) or parts.hostname == "localhost"):
        return "https:// URLs with a valid host and port"
    return None


#: Parameter Store: names "can include only the following symbols and letters: a-zA-Z0-9_.-"
#: and "/" between levels; "can't be prefixed with "aws" or "ssm" (case-insensitive)"; at most
#: fifteen levels and 1011 characters (PutParameter's Name,
#: https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html).
_PARAMETER: Final = re.compile(r"/?[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*")


def parameter_name_problem(name: str) -> str | None:
    levels = name.removeprefix("/").split("/")
    if (
        not _PARAMETER.fullmatch(name)
        or len(name) > 1011
        or len(levels) > 15
        or levels[0].lower().startswith(("aws", "ssm"))
    ):
        return (
            "the name of an SSM parameter such as /gpu-insights/webhook-url (a-zA-Z0-9_.- "
            "and '/', not starting with aws or ssm)"
        )
    return None


# arn:partition:service:region:account-id:resource
# https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html
PARTITIONS: Final = frozenset(
    {"aws", "aws-cn", "aws-us-gov", "aws-iso", "aws-iso-b", "aws-iso-e", "aws-iso-f", "aws-eusc"}
)
#: IAM role path and name: "/" or /path/ of up to 512 characters, name 1-64 of [\w+=,.@-].
#: https://docs.aws.amazon.com/IAM/latest/APIReference/API_Role.html
_ROLE: Final = re.compile(r"role(?P<path>(/[\x21-\x7e]+)*)/[\w+=,.@-]{1,64}")
_OIDC_PROVIDER: Final = re.compile(r"oidc-provider/[A-Za-z0-9.-]+(/[\x21-\x7e]+)*")


_EXAMPLES: Final = {
    "role": "arn:aws:iam::123456789012:role/eks-admin",
    "oidc-provider": (
        "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC123"
    ),
}


def iam_arn_problem(arn: str, resource_type: str) -> str | None:
    """Why ``arn`` is not an IAM ARN of ``resource_type`` (``role`` or ``oidc-provider``)."""
    example = _EXAMPLES[resource_type]
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn":
        return f"an ARN arn:partition:service:region:account:resource, such as {example}"
    _, partition, service, region, account, resource = parts
    pattern = _ROLE if resource_type == "role" else _OIDC_PROVIDER
    match = pattern.fullmatch(resource)
    problems = (
        (
            partition in PARTITIONS,
            f"an ARN in an AWS partition ({', '.join(sorted(PARTITIONS))}), not {partition!r}",
        ),
        (service == "iam", f"an IAM {resource_type} ARN (service iam, not {service!r})"),
        (not region, "an IAM ARN with no region (IAM is global)"),
        (re.fullmatch(r"\d{12}", account) is not None, "an ARN with a 12-digit account id"),
        (
            match is not None and len(match.groupdict().get("path") or "/") <= 512,
            f"an IAM {resource_type} ARN",
        ),
    )
    for ok, expected in problems:
        if not ok:
            return f"{expected}, such as {example}"
    return None


#: SNS topic names: "Up to 256 characters. Alphanumeric characters, hyphens (-) and underscores
#: (_) are allowed" (https://docs.aws.amazon.com/sns/latest/api/API_CreateTopic.html).
_TOPIC_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,256}")
#: KMS key ARNs: key/ and a key id, a UUID or a multi-Region key's mrk- and 32 hex digits
#: (https://docs.aws.amazon.com/kms/latest/developerguide/concepts.html#key-id-key-ARN). "To
#: specify a KMS key in an IAM policy statement, you must use its key ARN. You cannot use a key
#: id, alias name, or alias ARN"
#: (https://docs.aws.amazon.com/kms/latest/developerguide/cmks-in-iam-policies.html).
_KEY_ID: Final = re.compile(r"key/([0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}|mrk-[0-9a-f]{32})")


def _regional_arn(arn: str, service: str, example: str) -> tuple[str, str] | str:
    """(region, resource) of a regional ARN of ``service`` in this form, or why it is not."""
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != service:
        return f"an {service.upper()} ARN such as {example}"
    _, partition, _, region, account, resource = parts
    if partition not in PARTITIONS or not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", region):
        return f"an {service.upper()} ARN with a partition and a region, such as {example}"
    if not re.fullmatch(r"\d{12}", account):
        return f"an {service.upper()} ARN with a 12-digit account id, such as {example}"
    return region, resource


def sns_topic_arn_problem(arn: str) -> str | None:
    """Why ``arn`` is not a standard SNS topic's ARN the notifier can publish to, or None. A FIFO
    topic needs a message group id on every publish, which no notification here carries."""
    example = "arn:aws:sns:us-west-2:123456789012:oncall-critical"
    parsed = _regional_arn(arn, "sns", example)
    if isinstance(parsed, str):
        return parsed
    if parsed[1].endswith(".fifo"):
        return "a standard topic (a FIFO topic needs a message group id on every publish)"
    return None if _TOPIC_NAME.fullmatch(parsed[1]) else f"an SNS topic ARN such as {example}"


def kms_key_arn_problem(arn: str) -> str | None:
    """Why ``arn`` is not a KMS key ARN (an alias will not do in an IAM policy), or None."""
    example = "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    parsed = _regional_arn(arn, "kms", example)
    if isinstance(parsed, str):
        return parsed
    if _KEY_ID.fullmatch(parsed[1]):
        return None
    return f"a KMS key ARN (key/<key id>; IAM does not grant a key by its alias), such as {example}"


def arn_region(arn: str) -> str:
    """The region field of an ARN already checked by one of the checks above."""
    return arn.split(":")[3]


# General purpose bucket naming rules:
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
_BUCKET_NAME: Final = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_BUCKET_PREFIXES: Final = ("xn--", "sthree-", "amzn-s3-demo-")
_BUCKET_SUFFIXES: Final = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
_IPV4: Final = re.compile(r"\d{1,3}(\.\d{1,3}){3}")
# EBS volume ids: vol- and 8 or 17 hex digits.
# https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Volume.html
_VOLUME_ID: Final = re.compile(r"vol-([0-9a-f]{8}|[0-9a-f]{17})")


def bucket_problem(name: str) -> str | None:
    """Why S3 would refuse this general purpose bucket name, or None."""
    if not _BUCKET_NAME.fullmatch(name):
        return "S3 bucket names: 3 to 63 lowercase letters, digits, dots and hyphens"
    if ".." in name or _IPV4.fullmatch(name):
        return "S3 bucket names without two adjacent dots and not shaped like an IP address"
    if name.startswith(_BUCKET_PREFIXES) or name.endswith(_BUCKET_SUFFIXES):
        return "S3 bucket names without a prefix or suffix S3 reserves (xn--, -s3alias, ...)"
    return None


def data_source_problem(source: str) -> str | None:
    """A training data source is a bucket name or an EBS volume id, exactly as the storage
    findings name them (no s3:// URL, no ARN, no path)."""
    if _VOLUME_ID.fullmatch(source):
        return None
    reason = bucket_problem(source)
    return None if reason is None else "S3 bucket names (no s3:// or path) or EBS volume ids"


@functools.cache
def known_regions() -> frozenset[str]:
    """Every Region of every partition in the installed botocore's endpoint data (its
    ``endpoints.json``: the partitions' ``regions``), the list the AWS SDK itself resolves
    endpoints from."""
    import botocore.session  # synth and the commands only; botocore comes with boto3

    data = botocore.session.get_session().get_data("endpoints")
    return frozenset(region for p in data["partitions"] for region in p.get("regions", {}))


def region_problem(region: str) -> str | None:
    """Why no AWS endpoint answers in this Region (a typo such as us-weest-2), or None."""
    regions = known_regions()
    if region in regions:
        return None
    import botocore

    close = difflib.get_close_matches(region, sorted(regions), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return (
        f"an AWS Region botocore {botocore.__version__} knows (its partitions' endpoint data){hint}"
    )
