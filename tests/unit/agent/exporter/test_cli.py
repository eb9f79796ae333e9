"""The exporter's command line: what ``main`` hands the exporter it runs."""

from pathlib import Path

import pytest

from gpu_insights_agent.exporter import cli
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig, NvmlUnavailableError
from tests.unit.agent.exporter.nvml_trace import trace_lines


def _config_main_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str
) -> ExporterConfig:
    """The config of the exporter ``main`` builds from ``args`` (over a trace), caught at its
    start, which then fails as if NVML were gone so that ``main`` returns instead of running."""
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join(trace_lines()) + "\n")
    built: list[ExporterConfig] = []

    class Caught(Exporter):
        def start(self) -> None:
            built.append(self.config)
            raise NvmlUnavailableError("caught at start")

    monkeypatch.setattr(cli, "Exporter", Caught)
    argv = ["--cluster-name", "train", "--node-name", "ip-10-0-1-5", "--trace", str(trace)]
    assert cli.main([*argv, *args]) == 1
    (config,) = built
    return config


ATTRIBUTION = (
    *("--proc-root", "/proc", "--pod-log-root", "/host/var/log/pods"),
    *("--container-log-root", "/host/var/log/containers"),
)


@pytest.mark.parametrize(
    ("sink", "named"),
    [(("--sink", "otlp"), True), (("--sink", "stdout"), False), ((), False)],
)
def test_container_naming_is_on_only_over_otlp_with_the_container_log_root_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sink: tuple[str, ...], named: bool
) -> None:
    """``--container-log-root`` reaches the exporter whatever the sink, but it names the
    container on a GPU (``k8s.container.name``) only over OTLP: EMF's documents have no
    container field."""
    config = _config_main_runs(monkeypatch, tmp_path, *sink, *ATTRIBUTION)
    assert config.proc_root == Path("/proc")
    assert config.pod_log_root == Path("/host/var/log/pods")
    assert config.container_log_root == Path("/host/var/log/containers")
    assert config.name_containers is named


def test_without_the_flag_the_exporter_has_no_container_log_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Over OTLP without ``--container-log-root`` the exporter still names a pod's one
    container (from its /var/log/pods folder), with no symlink directory to read."""
    config = _config_main_runs(monkeypatch, tmp_path, "--sink", "otlp", *ATTRIBUTION[:4])
    assert (config.container_log_root, config.name_containers) == (None, True)
