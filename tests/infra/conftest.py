"""Synthesize the app once per settings variant; every infra test reads those templates."""

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template
from cfnlint.api import lint

from cdk.app import build
from cdk.settings import settings_from_context

Synth = Callable[[dict[str, Any]], list[Stack]]


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """Synthesize the app for a context (cached), cdk-nag included, and return its stacks."""
    cache: dict[str, list[Stack]] = {}

    def run(context: dict[str, Any]) -> list[Stack]:
        key = json.dumps(context, sort_keys=True)
        if key not in cache:
            outdir: Path = tmp_path_factory.mktemp("cdk.out")
            app = App(outdir=str(outdir))
            stacks = build(app, settings_from_context(context))
            app.synth()
            cache[key] = stacks
        return cache[key]

    return run


def stack_named(stacks: list[Stack], suffix: str) -> Stack:
    """The deployment's stack whose name ends with suffix (-Observability, -Alarms)."""
    (stack,) = [s for s in stacks if s.stack_name.endswith(suffix)]
    return stack


def lint_errors(stack: Stack, regions: list[str]) -> list[str]:
    """cfn-lint's errors (its E rules) on the stack's template in the Regions."""
    return list(_template_lint_errors(json.dumps(Template.from_stack(stack).to_json()), *regions))


@functools.cache
def _template_lint_errors(template: str, *regions: str) -> tuple[str, ...]:
    """Linted once per distinct template: deployment shapes that differ in one stack share
    their other stacks' templates, and cfn-lint takes seconds on each."""
    return tuple(str(m) for m in lint(template, regions=list(regions)) if m.rule.id.startswith("E"))
