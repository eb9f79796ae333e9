"""README.md and docs/ against the code: every command and option they show exists in the
command line's parser, every ``-c`` key is a setting, every relative link resolves, every
command is documented, and the README's cost figure is what the command prints."""

import argparse
import re
from pathlib import Path

import pytest

from cdk.settings import SETTING_KEYS
from cli.main import _parser, main
from gpu_insights_agent.contract.metrics import ADDON_DCGM_FIELDS
from tests.docs_text import DOCS, README, ROOT, context_keys, gpu_insights_commands, pages

_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {
        name: sub
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, sub in action.choices.items()
    }


def command_problems(command: str) -> list[str]:
    """What in one ``gpu-insights ...`` command the parser does not know, in words."""
    parser = _parser()
    words = command.split()[1:]
    path = ["gpu-insights"]
    while words and (subs := _subcommands(parser)) and re.fullmatch(r"[a-z][a-z-]*", words[0]):
        if words[0] not in subs:
            return [f"{' '.join(path)} has no command {words[0]!r}"]
        parser = subs[words.pop(0)]
        path.append(parser.prog.split()[-1])
    known = set(parser._option_string_actions)
    return [
        f"{' '.join(path)} has no option {option}"
        for option in _OPTION.findall(" ".join(words))
        if option not in known
    ]


def test_the_command_check_finds_a_wrong_command_and_option() -> None:
    assert command_problems("gpu-insights status -c cluster_name=x --json") == []
    assert command_problems("gpu-insights analyze storage --cluster-name x [--scope cluster]") == []
    assert command_problems("gpu-insights statu -c cluster_name=x") == [
        "gpu-insights has no command 'statu'"
    ]
    assert command_problems("gpu-insights manifest --image x --cluster x") == [
        "gpu-insights manifest has no option --cluster"
    ]
    assert command_problems("gpu-insights analyze storag") == [
        "gpu-insights analyze has no command 'storag'"
    ]


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_every_command_shown_exists_in_the_command_line(page: Path) -> None:
    commands = gpu_insights_commands(page.read_text())
    assert [p for c in commands for p in command_problems(c)] == []


def test_the_readme_shows_the_deploy_commands() -> None:
    shown = {c.split()[1] for c in gpu_insights_commands(README.read_text()) if " " in c}
    assert {"preflight", "manifest", "status", "cost-estimate"} <= shown


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_every_setting_shown_with_c_is_a_setting(page: Path) -> None:
    assert set(context_keys(page.read_text())) - SETTING_KEYS == set()


def test_every_command_of_the_command_line_is_documented() -> None:
    text = (DOCS / "cli.md").read_text()
    undocumented = {name for name in _subcommands(_parser()) if f"`gpu-insights {name}" not in text}
    assert undocumented == set()


def link_problems(page: Path) -> list[str]:
    """Each relative link of a page whose file is not in the repository."""
    problems = []
    for target in _LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists() or ROOT not in path.parents:
            problems.append(f"{page.name}: {target}")
    return problems


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("[here](page.md), [there](gone.md#x), [web](https://example.com), [a](#b)")
    assert link_problems(page) == ["page.md: page.md", "page.md: gone.md#x"]


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    assert link_problems(page) == []


def test_the_readme_links_every_docs_page() -> None:
    linked = set(_LINK.findall(README.read_text()))
    assert {f"docs/{p.name}" for p in DOCS.glob("*.md")} - linked == set()


def test_the_readmes_cost_figure_is_what_the_command_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each mode's figure is the one its command prints, in the order the commands are shown."""
    readme = README.read_text()
    totals = []
    for command in [c for c in gpu_insights_commands(readme) if "cost-estimate" in c]:
        assert main(command.split()[1:]) == 0
        (total,) = re.findall(r"^\$\s*([\d,.]+)\s+a month", capsys.readouterr().out, re.M)
        totals.append(total)
    assert len(totals) == 3
    assert re.findall(r"\$([\d,.]+) a month in (?:Classic|OTel)\s+mode", readme) == totals


def test_every_setting_is_in_the_settings_page() -> None:
    """docs/settings.md is where a refused key is sent (cdk/settings.py): it names each one."""
    text = (DOCS / "settings.md").read_text()
    assert {key for key in SETTING_KEYS if f"`{key}`" not in text} == set()


def test_the_readmes_training_figures_are_the_codes() -> None:
    """The job alarms' defaults and price, and the failure log reads' Logs Insights price at
    2,000 GPUs, as the README's training paragraph states them."""
    from benchmarks.failure_logs import log_reads
    from cdk.alarms.jobs import JOB_ALARM_KINDS, JobAlarmSettings
    from cli.cost.prices import INSIGHTS_ALARM

    text = " ".join(README.read_text().split())
    paragraph = text[text.index("**Training jobs.**") : text.index("**Weekly report.**")]
    defaults = JobAlarmSettings()
    for kind in JOB_ALARM_KINDS:
        assert f"`{kind}`" in paragraph
    assert f"no step for {defaults.hung_minutes} minutes past due" in paragraph
    assert f"a loss {defaults.loss_spike_deviations:g} robust deviations" in paragraph
    assert (
        f"under {defaults.throughput_fraction:g} of its recent samples per second for "
        f"{defaults.throughput_window_minutes} minutes"
    ) in paragraph
    assert (
        f"step time {defaults.step_time_rise_percent:g}% over its recent median for "
        f"{defaults.step_time_rise_minutes} minutes"
    ) in paragraph
    assert f"goodput over the last hour under {defaults.goodput_percent:g}%" in paragraph
    # one series per job each, and again for each kind's fleet count (catalog.cap_alarms)
    per_job = 2 * len(JOB_ALARM_KINDS) * INSIGHTS_ALARM.usd
    assert f"${per_job:.2f} a job a month for the six" in paragraph
    fleet = log_reads()[-1]
    assert (
        f"${fleet.insights_usd_per_day:.2f} a day for the {fleet.failed_per_day:g} failed jobs "
        f"a day of a 2,000-GPU fleet"
    ) in paragraph


def test_the_metrics_page_names_every_serving_metric_and_model_label() -> None:
    """docs/metrics.md's serving table is the contract's (contract/serving.py), every name and
    rename in it."""
    from gpu_insights_agent.contract.serving import SERVERS, SERVING_METRICS

    text = (DOCS / "metrics.md").read_text()
    names = {n for m in SERVING_METRICS for n in m.names} | {
        r.model_label for r in SERVERS.values()
    }
    assert {n for n in names if f"`{n}`" not in text} == set()


def test_metrics_doc_counts_and_names_the_addons_dcgm_fields() -> None:
    """docs/metrics.md says how many DCGM fields the add-on collects and names each: the
    contract's ``ADDON_DCGM_FIELDS`` (ten, tensor activity included)."""

    text = (DOCS / "metrics.md").read_text()
    words = {9: "nine", 10: "ten", 11: "eleven"}
    assert f"helm-charts): {words[len(ADDON_DCGM_FIELDS)]} fields" in text
    assert f"the add-on's {words[len(ADDON_DCGM_FIELDS)]}." in text
    assert [f for f in sorted(ADDON_DCGM_FIELDS) if f"`{f}`" not in text] == []


def test_the_drift_page_states_the_codes_thresholds_and_the_benchmarks_target_lines() -> None:
    """docs/drift.md's calibration figures are lambdas/shared/thresholds.py's, and its measured
    lines for the target (a 20% shift at 1,000 requests an hour or more, caught in its first
    hour) are what the benchmark prints for them, replayed alone (each case seeded apart)."""
    from benchmarks import serving_drift as bench
    from lambdas.shared.thresholds import (
        DRIFT_BASELINE_WEEKS,
        DRIFT_FALSE_ALARMS_PER_MODEL_DAY,
        DRIFT_MIN_EFFECT,
        DRIFT_MIN_SHARE_POINTS,
        DRIFT_MIN_SHARE_RATIO,
    )
    from lambdas.training_analyzer.serving.drift.detect import alpha_per_test
    from lambdas.training_analyzer.serving.drift.promql import FALLBACK_DAYS

    text = " ".join((DOCS / "drift.md").read_text().split())
    words = {4: "four", 6: "six"}
    share = 100 * DRIFT_FALSE_ALARMS_PER_MODEL_DAY
    assert f"`DRIFT_FALSE_ALARMS_PER_MODEL_DAY` ({share:g}%" in text
    assert f"0.005 / 75 = {alpha_per_test(3):.2g}" in text
    assert f"moved {100 * DRIFT_MIN_EFFECT:g}% or more" in text
    assert f"distance is {DRIFT_MIN_EFFECT:g} or more" in text
    assert f"share is {DRIFT_MIN_SHARE_RATIO:g} times larger" in text
    assert f"moved {DRIFT_MIN_SHARE_POINTS:g} points or more" in text
    assert f"the same hour of the {words[DRIFT_BASELINE_WEEKS]} weeks before" in text
    assert f"the same hour of the {words[FALLBACK_DAYS]} days before" in text
    assert f"{bench.MODEL_DAYS:,} unchanged model-days" in text
    assert f"{bench.SHIFTS} shifts per case" in text
    for rate in (1_000, 10_000):
        for case in bench.CASES:
            line = bench.detection_line(bench.detection(rate, case, bench.SIGMA))
            assert "100% caught in the first hour" in line
            assert line in text
