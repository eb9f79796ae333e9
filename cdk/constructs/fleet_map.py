"""A fleet too large for one function run, analysed by AWS Step Functions Distributed Map:
``plan`` (one invocation) lists the fleet and returns its shards, the Map runs one ``shard``
invocation per shard as child workflow executions, ``merge`` publishes the day's one findings
file (lambdas/storage_analyzer/fleet.py, lambdas/training_analyzer/fleet.py: one construct,
one state machine per analyzer, ``counted`` naming what its plan counts). The schedule starts
the state machine with its event, whose ``time`` every step reads, so all steps analyse the
same window.

Distributed Map: https://docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html
(its child executions need states:StartExecution on the state machine, which CDK grants).
"""

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from cdk.constructs.checkov import LOG_GROUP_REASONS, skip_checks
from cdk.constructs.nag import _render
from lambdas.shared.shards import MAX_CONCURRENCY


class FleetMap(Construct):
    """Attributes: ``state_machine``, ``schedule`` (rule)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.IFunction,
        description: str,
        schedule: str,
        counted: str = "volumes",
    ) -> None:
        super().__init__(scope, construct_id)
        plan = tasks.LambdaInvoke(
            self,
            "Plan",
            lambda_function=function,
            payload=sfn.TaskInput.from_object(
                {"mode": "plan", "time": sfn.JsonPath.string_at("$.time")}
            ),
            payload_response_only=True,
            result_path="$.plan",
        )
        shard = tasks.LambdaInvoke(
            self,
            "Shard",
            lambda_function=function,
            payload_response_only=True,
            retry_on_service_exceptions=True,
        )
        # A shard that still fails after its retries fails the run: the merge refuses a missing
        # part rather than write a findings file that silently lacks a shard's volumes or jobs.
        for task in (plan, shard):
            _retry_throttling(task)
        shards = sfn.DistributedMap(
            self,
            "Shards",
            items_path="$.plan.shards",
            item_selector={
                "mode": "shard",
                "time": sfn.JsonPath.string_at("$.time"),
                "index": sfn.JsonPath.number_at("$$.Map.Item.Value.index"),
                "first": sfn.JsonPath.number_at("$$.Map.Item.Value.first"),
                "count": sfn.JsonPath.number_at("$$.Map.Item.Value.count"),
            },
            max_concurrency=MAX_CONCURRENCY,
            result_path=sfn.JsonPath.DISCARD,
        )
        shards.item_processor(shard)
        merge = tasks.LambdaInvoke(
            self,
            "Merge",
            lambda_function=function,
            payload=sfn.TaskInput.from_object(
                {
                    "mode": "merge",
                    "time": sfn.JsonPath.string_at("$.time"),
                    counted: sfn.JsonPath.number_at(f"$.plan.{counted}"),
                    "shards": sfn.JsonPath.list_at("$.plan.shards"),
                }
            ),
            payload_response_only=True,
        )
        _retry_throttling(merge)
        log_group = logs.LogGroup(
            self,
            "Logs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        skip_checks(log_group, LOG_GROUP_REASONS)
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            comment=description,
            definition_body=sfn.DefinitionBody.from_chainable(plan.next(shards).next(merge)),
            timeout=Duration.hours(6),
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL),
        )
        self._acknowledge(function)
        self.schedule = events.Rule(
            self,
            "Schedule",
            description=f"Runs: {description}",
            schedule=events.Schedule.expression(schedule),
            targets=[targets.SfnStateMachine(self.state_machine, retry_attempts=2)],
        )

    def _acknowledge(self, function: lambda_.IFunction) -> None:
        """The wildcards CDK writes into the state machine's policies, each named."""
        stack = Stack.of(self)
        machine = stack.resolve(stack.get_logical_id(self.state_machine.node.default_child))  # type: ignore[arg-type]
        execution = (
            f"arn:<AWS::Partition>:states:{_render(stack.resolve(stack.region))}:"
            f"{_render(stack.resolve(stack.account))}:execution:"
            f'{{"Fn::Select":[6,{{"Fn::Split":[":",{{"Ref":"{machine}"}}]}}]}}'
        )
        reasons = {
            "*": "X-Ray's PutTraceSegments and CloudWatch Logs' log-delivery actions take no "
            "resource ARNs (Step Functions logging and tracing need them)",
            f"{_arn(stack, function)}:*": "the function's versions and aliases, as "
            "CDK's LambdaInvoke grants them",
            f"{execution}:*": "the Distributed Map's child executions of this state machine, "
            "whose names Step Functions chooses",
            f"{execution}/*:*": "the Distributed Map's child executions of this state machine, "
            "whose names Step Functions chooses",
        }
        Validations.of(self.state_machine).acknowledge(
            *(
                Acknowledgment(id=f"AwsSolutions-IAM5[Resource::{resource}]", reason=reason)
                for resource, reason in reasons.items()
            )
        )


def _retry_throttling(task: tasks.LambdaInvoke) -> None:
    """Throttling retried with backoff rather than failing the day: ten shards at once, or the
    plan and merge beside other functions, can meet the account's Lambda concurrency, and
    Step Functions reports that as ``Lambda.TooManyRequestsException``, which the service
    exceptions CDK retries by default do not include ("Handle transient Lambda service
    exceptions": https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html)."""
    task.add_retry(
        errors=["Lambda.TooManyRequestsException"],
        interval=Duration.seconds(2),
        max_attempts=6,
        backoff_rate=2,
    )


def _arn(stack: Stack, function: lambda_.IFunction) -> str:
    logical_id = stack.resolve(stack.get_logical_id(function.node.default_child))  # type: ignore[arg-type]
    return f"<{logical_id}.Arn>"
