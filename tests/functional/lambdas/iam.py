"""Run a Lambda handler in moto as its own role: the policy synthesized for that role (read from
the template, intrinsics resolved to the moto resources' ARNs), with moto's IAM authorization
on, so a missing or misspelt permission fails the test with AccessDenied.

moto's authorization (moto/core/authorization.py, moto/iam/access_control.py; documented at
https://docs.getmoto.org/en/latest/docs/iam.html) is partial, and these are its limits here:

- Resources: moto authorizes S3 calls on the bucket or object ARN and SQS calls on the queue
  ARN; every other service's call is authorized on "*". So statements about other services
  (events, sns, kms, logs, cloudwatch, ec2) are given to moto with ``Resource: "*"``: their
  actions are enforced, their resource ARNs are not (the policy-evaluator tests check those).
- Conditions: moto passes no request context, and evaluates only StringEquals, so a condition
  never denies (``cloudwatch:namespace`` on PutMetricData): the policy-evaluator tests
  check conditions.
- Action names: moto names an action by the request's signing name, so CloudWatch's
  ``cloudwatch:*`` actions are handed to it as ``monitoring:*``.
- Implicit calls: S3's use of the KMS key (SSE-KMS) and SNS's are not authorized by moto.
- Operations moto lacks and that ``cli.service_answers.answer`` answers before they are sent
  (DescribeAlarmHistory, ListBucketMetricsConfigurations) are not authorized by moto.
"""

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import boto3
import pytest
from moto import settings as moto_settings

ACCOUNT = "123456789012"
REGION = "us-east-1"
PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::URLSuffix": "amazonaws.com",
}
#: Services whose calls moto authorizes on the resource's ARN; all others on "*".
RESOURCE_AWARE = {"s3", "sqs"}
Statement = dict[str, Any]


class UnresolvedIntrinsicError(ValueError):
    """A template value this resolver does not know how to turn into a string."""


def logical_name(logical_id: str) -> str:
    """A CDK logical ID without its hash: ReportBucket83562F83 -> ReportBucket."""
    return re.sub(r"[0-9A-F]{8}$", "", logical_id)


def resolve(value: Any, physical: Mapping[str, Mapping[str, str]]) -> Any:
    """Ref, Fn::GetAtt, Fn::Join and Fn::Sub resolved; ``physical`` maps a logical name (no
    hash) to its attributes ("Ref", "Arn"). A resource the test did not create resolves to an
    ARN that matches nothing, so a statement about it grants nothing."""

    def attribute(logical_id: str, attr: str) -> str:
        if logical_id in PSEUDO:
            return PSEUDO[logical_id]
        found = physical.get(logical_name(logical_id), {})
        return found.get(attr, f"arn:aws:unresolved:::{logical_id}.{attr}")

    def intrinsic(key: str, arg: Any) -> str:
        if key == "Ref":
            return attribute(arg, "Ref")
        if key == "Fn::GetAtt":
            return attribute(arg[0], arg[1])
        if key == "Fn::Join":
            return str(arg[0]).join(str(resolve(p, physical)) for p in arg[1])
        if key == "Fn::Sub":
            text, names = (arg, {}) if isinstance(arg, str) else arg
            values = {k: str(resolve(v, physical)) for k, v in names.items()}

            def sub(m: re.Match[str]) -> str:
                ref, _, attr = m.group(1).partition(".")
                return values.get(m.group(1)) or attribute(ref, attr or "Ref")

            return re.sub(r"\$\{([^}!]+)\}", sub, text)
        raise UnresolvedIntrinsicError(f"{key}: {json.dumps(arg)}")

    if isinstance(value, list):
        return [resolve(v, physical) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1 and (next(iter(value)) == "Ref" or next(iter(value)).startswith("Fn::")):
        ((key, arg),) = value.items()
        return intrinsic(key, arg)
    return {k: resolve(v, physical) for k, v in value.items()}


#: The policy resources that attach statements to a role by naming it in ``Roles``.
POLICY_TYPES: Final = ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")


def role_statements(templates: list[dict[str, Any]], handler: str) -> list[Statement]:
    """The statements of every IAM policy attached to the role of the function whose handler
    is ``handler`` (inline role policies included), unresolved."""
    for template in templates:
        resources = template["Resources"]
        for function in resources.values():
            props = function.get("Properties", {})
            if function["Type"] != "AWS::Lambda::Function" or props.get("Handler") != handler:
                continue
            role = props["Role"]["Fn::GetAtt"][0]
            statements: list[Statement] = []
            for policy in resources[role]["Properties"].get("Policies", []):
                statements += policy["PolicyDocument"]["Statement"]
            # Its policies, and the managed ones CDK attaches where the role's default policy
            # grows past IAM's size limit (overflow policies naming the role).
            for resource in resources.values():
                attached = {"Ref": role} in resource.get("Properties", {}).get("Roles", [])
                if resource["Type"] in POLICY_TYPES and attached:
                    statements += resource["Properties"]["PolicyDocument"]["Statement"]
            return statements
    raise LookupError(f"no function with handler {handler} in the synthesized templates")


def _actions(statement: Statement) -> list[str]:
    actions = statement.get("Action", [])
    return [actions] if isinstance(actions, str) else list(actions)


def for_moto(statements: list[Statement]) -> list[Statement]:
    """Statements moto can evaluate: those about services moto authorizes on "*" get "*", and
    CloudWatch's actions are named by its signing name, as moto names them (monitoring:...)."""
    out = []
    for statement in statements:
        actions = _actions(statement)
        services = {a.split(":", 1)[0] for a in actions}
        moto_statement = {
            **statement,
            "Action": [re.sub(r"^cloudwatch:", "monitoring:", a) for a in actions],
        }
        if services - RESOURCE_AWARE:
            moto_statement["Resource"] = "*"
        out.append(moto_statement)
    return out


@dataclass
class Principal:
    """The role's clients (for the handler) and an administrator's (for the test to read)."""

    role: Callable[[str], Any]
    admin: Callable[[str], Any]
    statements: list[Statement]


def run_as_role(
    statements: list[Statement], monkeypatch: pytest.MonkeyPatch, name: str
) -> Principal:
    """Inside mock_aws, after seeding: a role holding exactly ``statements`` (resolved), its
    credentials, and moto's IAM authorization switched on for every later call."""
    root = boto3.Session(region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t")
    iam = root.client("iam")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "lambda.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    document = {"Version": "2012-10-17", "Statement": for_moto(statements)}
    iam.put_role_policy(
        RoleName=name, PolicyName="synthesized", PolicyDocument=json.dumps(document)
    )
    credentials = root.client("sts").assume_role(RoleArn=arn, RoleSessionName="lambda")[
        "Credentials"
    ]
    iam.create_user(UserName="test-admin")
    iam.put_user_policy(
        UserName="test-admin",
        PolicyName="all",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
            }
        ),
    )
    key = iam.create_access_key(UserName="test-admin")["AccessKey"]
    role_session = boto3.Session(
        region_name=REGION,
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    admin_session = boto3.Session(
        region_name=REGION,
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key=key["SecretAccessKey"],
    )
    # moto authorizes every request once its count of unauthorized requests reaches this.
    monkeypatch.setattr(moto_settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
    return Principal(
        role=_cached(role_session), admin=_cached(admin_session), statements=statements
    )


def _cached(session: boto3.Session) -> Callable[[str], Any]:
    made: dict[str, Any] = {}

    def get(service: str) -> Any:
        if service not in made:
            made[service] = session.client(service)  # type: ignore[call-overload]
        return made[service]

    return get


def without(
    statements: list[Statement], drop: str | Callable[[Statement], bool]
) -> list[Statement]:
    """The statements less one: the one with Sid ``drop``, or the one ``drop`` picks."""
    picked = drop if callable(drop) else (lambda s: s.get("Sid") == drop)
    kept = [s for s in statements if not picked(s)]
    assert len(kept) == len(statements) - 1, f"{drop} picks no single statement"
    return kept
