"""The storage and the training analysis above their shard thresholds: a Distributed Map
state machine on the schedule instead of the function; at or below it, the function on the
schedule and no state machine. The definition is read from the synthesized template.
https://docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html"""

import json
from typing import Any

from aws_cdk.assertions import Template

from tests.infra.conftest import Synth, stack_named
from tests.infra.test_security_review import FULL


def _template(synth: Synth, context: dict[str, Any]) -> Template:
    return Template.from_stack(stack_named(synth(context), "-Analyzers"))


def _machine(template: Template, prefix: str) -> tuple[str, dict[str, Any]]:
    machines = template.find_resources("AWS::StepFunctions::StateMachine")
    return next((k, dict(m)) for k, m in machines.items() if k.startswith(prefix))


def _targets(template: Template) -> list[Any]:
    return [
        t["Arn"]
        for rule in template.find_resources("AWS::Events::Rule").values()
        for t in rule["Properties"]["Targets"]
    ]


def _definition(template: Template, prefix: str = "StorageFleet") -> dict[str, Any]:
    _, machine = _machine(template, prefix)
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else "ARN" for p in parts)
    definition: dict[str, Any] = json.loads(text)
    return definition


def test_a_fleet_above_the_threshold_runs_as_a_distributed_map(synth: Synth) -> None:
    template = _template(synth, FULL)  # storage_fleet_volumes 100,000 > 20,000
    d = _definition(template)
    assert d["StartAt"] == "Plan"
    assert d["States"]["Plan"]["Next"] == "Shards"
    assert d["States"]["Plan"]["Parameters"] == {"mode": "plan", "time.$": "$.time"}
    shards = d["States"]["Shards"]
    assert shards["Type"] == "Map"
    assert shards["ItemProcessor"]["ProcessorConfig"]["Mode"] == "DISTRIBUTED"
    assert shards["ItemsPath"] == "$.plan.shards"
    assert shards["MaxConcurrency"] == 10
    assert shards["ItemSelector"] == {
        "mode": "shard",
        "time.$": "$.time",
        "index.$": "$$.Map.Item.Value.index",
        "first.$": "$$.Map.Item.Value.first",
        "count.$": "$$.Map.Item.Value.count",
    }
    assert shards["ItemProcessor"]["States"]["Shard"]["Type"] == "Task"  # the item is its payload
    retries = shards["ItemProcessor"]["States"]["Shard"]["Retry"]
    throttled = next(r for r in retries if r["ErrorEquals"] == ["Lambda.TooManyRequestsException"])
    assert (throttled["MaxAttempts"], throttled["BackoffRate"]) == (6, 2)
    assert shards["Next"] == "Merge"
    merge = d["States"]["Merge"]["Parameters"]
    assert merge["mode"] == "merge"
    assert merge["shards.$"] == "$.plan.shards"
    assert d["States"]["Merge"]["End"] is True
    # The schedule starts the state machine; no schedule invokes the function directly.
    targets = _targets(template)
    machine_id, _ = _machine(template, "StorageFleet")
    assert {"Ref": machine_id} in targets
    function_ids = template.find_resources("AWS::Lambda::Function")
    storage = next(f for f in function_ids if f.startswith("StorageAnalyzer"))
    assert {"Fn::GetAtt": [storage, "Arn"]} not in targets
    env = function_ids[storage]["Properties"]["Environment"]["Variables"]
    assert env["SHARD_VOLUMES"] == "20000"


def test_a_fleet_at_the_threshold_is_one_scheduled_function(synth: Synth) -> None:
    context = {**FULL, "storage_fleet_volumes": "20000"}
    template = _template(synth, context)
    machines = template.find_resources("AWS::StepFunctions::StateMachine")
    assert [k for k in machines if k.startswith("StorageFleet")] == []
    storage = next(
        f for f in template.find_resources("AWS::Lambda::Function") if f.startswith("Storage")
    )
    targets = _targets(template)
    assert {"Fn::GetAtt": [storage, "Arn"]} in targets


def test_a_training_fleet_above_the_threshold_runs_as_its_own_distributed_map(
    synth: Synth,
) -> None:
    """The same construct, a second state machine: its merge is told the jobs counted."""
    template = _template(synth, FULL)  # training_fleet_jobs 10,000 > 2,000
    assert len(template.find_resources("AWS::StepFunctions::StateMachine")) == 2
    d = _definition(template, "TrainingFleet")
    assert d["Comment"] == "Training analyzer of train-prod, in shards of 2,000 jobs"
    assert [d["StartAt"], d["States"]["Plan"]["Next"], d["States"]["Shards"]["Next"]] == [
        "Plan",
        "Shards",
        "Merge",
    ]
    assert d["States"]["Plan"]["Parameters"] == {"mode": "plan", "time.$": "$.time"}
    shards = d["States"]["Shards"]
    assert shards["ItemProcessor"]["ProcessorConfig"]["Mode"] == "DISTRIBUTED"
    assert shards["ItemsPath"] == "$.plan.shards"
    assert shards["MaxConcurrency"] == 10
    assert shards["ItemSelector"]["mode"] == "shard"
    assert shards["ItemSelector"]["first.$"] == "$$.Map.Item.Value.first"
    assert d["States"]["Merge"]["Parameters"] == {
        "mode": "merge",
        "time.$": "$.time",
        "jobs.$": "$.plan.jobs",
        "shards.$": "$.plan.shards",
    }
    assert d["States"]["Merge"]["End"] is True
    targets = _targets(template)
    machine_id, _ = _machine(template, "TrainingFleet")
    assert {"Ref": machine_id} in targets
    functions = template.find_resources("AWS::Lambda::Function")
    training = next(f for f in functions if f.startswith("TrainingAnalyzer"))
    assert {"Fn::GetAtt": [training, "Arn"]} not in targets
    env = functions[training]["Properties"]["Environment"]["Variables"]
    assert env["SHARD_JOBS"] == "2000"


def test_a_training_fleet_at_the_threshold_is_one_scheduled_function(synth: Synth) -> None:
    template = _template(synth, {**FULL, "training_fleet_jobs": "2000"})
    machines = template.find_resources("AWS::StepFunctions::StateMachine")
    assert [k for k in machines if k.startswith("TrainingFleet")] == []
    training = next(
        f for f in template.find_resources("AWS::Lambda::Function") if f.startswith("Training")
    )
    assert {"Fn::GetAtt": [training, "Arn"]} in _targets(template)


def test_every_lambda_task_retries_throttling_with_backoff(synth: Synth) -> None:
    """Plan, each Shard and Merge: Step Functions reports a throttled invocation as
    ``Lambda.TooManyRequestsException``, which "Handle transient Lambda service exceptions"
    (https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html)
    names apart from the service exceptions; each task retries it with backoff."""
    template = _template(synth, FULL)
    for prefix in ("StorageFleet", "TrainingFleet"):
        states = _definition(template, prefix)["States"]
        tasks = {
            "Plan": states["Plan"],
            "Shard": states["Shards"]["ItemProcessor"]["States"]["Shard"],
            "Merge": states["Merge"],
        }
        for name, task in tasks.items():
            throttled = [
                r for r in task["Retry"] if r["ErrorEquals"] == ["Lambda.TooManyRequestsException"]
            ]
            assert [
                (r["IntervalSeconds"], r["MaxAttempts"], r["BackoffRate"]) for r in throttled
            ] == [(2, 6, 2)], (prefix, name)
