"""Turns a synthesized template's CloudFormation intrinsics into the concrete strings AWS would
evaluate, so that its policies can be handed to a policy evaluator.

Physical names that CloudFormation would generate are stood in for by the logical id; ARNs are
built the way each resource type's ``Arn`` return value is documented. One that matters: a log
group's ``Arn`` ends with ``:*`` (https://docs.aws.amazon.com/AWSCloudFormation/latest/
TemplateReference/aws-resource-logs-loggroup.html#aws-resource-logs-loggroup-return-values).
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar


class ResolveError(ValueError):
    """An intrinsic or a resource type this resolver does not know; the message names it."""


@dataclass(frozen=True)
class Resolver:
    template: dict[str, Any]
    account: str
    region: str
    partition: str = "aws"

    @property
    def resources(self) -> dict[str, Any]:
        resources: dict[str, Any] = self.template["Resources"]
        return resources

    def pseudo(self, name: str) -> str:
        values = {
            "AWS::Partition": self.partition,
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name not in values:
            raise ResolveError(f"no value for the pseudo parameter {name}")
        return values[name]

    def _name(self, logical_id: str, prop: str) -> str:
        value = self.resources[logical_id].get("Properties", {}).get(prop)
        return str(self(value)) if value is not None else logical_id.lower()

    def arn(self, logical_id: str) -> str:
        """The resource's ARN (its ``Fn::GetAtt [id, Arn]``)."""
        kind = self.resources[logical_id]["Type"]
        if kind not in _ARNS:
            raise ResolveError(f"no ARN for {logical_id} of type {kind}")
        pattern, name_property = _ARNS[kind]
        name = (
            logical_id.lower() if name_property is None else self._name(logical_id, name_property)
        )
        return pattern.format(p=self.partition, r=self.region, a=self.account, name=name)

    def ref(self, name: str) -> str:
        if name.startswith("AWS::"):
            return self.pseudo(name)
        kind = self.resources[name]["Type"]
        # A layer version's Ref is its ARN: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-lambda-layerversion.html
        if kind in {"AWS::SNS::Topic", "AWS::StepFunctions::StateMachine", _LAYER}:
            return self.arn(name)
        if kind == "AWS::KMS::Key":
            return name.lower()
        if kind == "AWS::SQS::Queue":
            queue = self._name(name, "QueueName")
            return f"https://sqs.{self.region}.amazonaws.com/{self.account}/{queue}"
        name_property = _ARNS.get(kind, ("", None))[1]
        if name_property is None:
            raise ResolveError(f"no Ref value for {name} of type {kind}")
        return self._name(name, name_property)

    def get_att(self, logical_id: str, attribute: str) -> str:
        if attribute == "Arn":
            return self.arn(logical_id)
        if attribute == "QueueName":
            return self._name(logical_id, "QueueName")
        raise ResolveError(f"no value for {logical_id}.{attribute}")

    def _sub(self, text: str, variables: dict[str, Any]) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(self(variables[name]))
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return self.get_att(logical_id, attribute)
            return self.ref(name)

        return re.sub(r"\$\{([^}!]+)\}", value, text)

    def __call__(self, value: Any) -> Any:
        """The value with every intrinsic inside it resolved."""
        if isinstance(value, list):
            return [self(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self.ref(arg)
            if key.startswith("Fn::"):
                if key not in self._functions:
                    raise ResolveError(f"no resolution for {key}")
                return self._functions[key](self, arg)
        return {k: self(v) for k, v in value.items()}

    def _get_att(self, arg: Any) -> str:
        logical_id, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
        return self.get_att(logical_id, attribute)

    def _join(self, arg: Any) -> str:
        separator, parts = arg
        return str(separator).join(str(self(p)) for p in parts)

    def _sub_intrinsic(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else arg
        return self._sub(text, variables)

    def _select(self, arg: Any) -> Any:
        index, items = arg
        return self(items)[int(index)]

    def _split(self, arg: Any) -> list[str]:
        separator, text = arg
        return str(self(text)).split(separator)

    _functions: ClassVar[dict[str, Callable[["Resolver", Any], Any]]] = {
        "Fn::GetAtt": _get_att,
        "Fn::Join": _join,
        "Fn::Sub": _sub_intrinsic,
        "Fn::Select": _select,
        "Fn::Split": _split,
    }


_LAYER = "AWS::Lambda::LayerVersion"

#: Per resource type: its ARN, and the property naming it (None: the logical id stands in).
_ARNS: dict[str, tuple[str, str | None]] = {
    "AWS::SNS::Topic": ("arn:{p}:sns:{r}:{a}:{name}", "TopicName"),
    "AWS::SQS::Queue": ("arn:{p}:sqs:{r}:{a}:{name}", "QueueName"),
    "AWS::S3::Bucket": ("arn:{p}:s3:::{name}", "BucketName"),
    "AWS::KMS::Key": ("arn:{p}:kms:{r}:{a}:key/{name}", None),
    "AWS::Lambda::Function": ("arn:{p}:lambda:{r}:{a}:function:{name}", "FunctionName"),
    _LAYER: ("arn:{p}:lambda:{r}:{a}:layer:{name}:1", "LayerName"),
    "AWS::IAM::Role": ("arn:{p}:iam::{a}:role/{name}", "RoleName"),
    "AWS::Logs::LogGroup": ("arn:{p}:logs:{r}:{a}:log-group:{name}:*", "LogGroupName"),
    "AWS::DynamoDB::Table": ("arn:{p}:dynamodb:{r}:{a}:table/{name}", "TableName"),
    "AWS::Events::Rule": ("arn:{p}:events:{r}:{a}:rule/{name}", "Name"),
    "AWS::StepFunctions::StateMachine": (
        "arn:{p}:states:{r}:{a}:stateMachine:{name}",
        "StateMachineName",
    ),
    "AWS::CloudWatch::Alarm": ("arn:{p}:cloudwatch:{r}:{a}:alarm:{name}", "AlarmName"),
    "AWS::CloudWatch::CompositeAlarm": ("arn:{p}:cloudwatch:{r}:{a}:alarm:{name}", "AlarmName"),
}
