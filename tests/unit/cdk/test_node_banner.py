"""jsii's Node banner: `cdk synth` and the demo start aws_cdk's Node process after importing
the cdk package, which quiets it; it once printed as Python byte strings (b'!!  Node 20 is
end-of-life ...') on every synth."""

import os
import subprocess
import sys
from pathlib import Path

from cdk.node_banner import QUIET, quiet_node_banner

ROOT = Path(__file__).resolve().parents[3]


def test_an_app_started_after_the_cdk_package_prints_no_banner() -> None:
    environ = {k: v for k, v in os.environ.items() if k not in QUIET}
    environ["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", "import cdk.settings, aws_cdk; aws_cdk.App().synth()"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "b'" not in done.stderr
    assert "Node" not in done.stderr
    assert done.stderr == ""


def test_a_value_the_user_set_is_kept() -> None:
    environ = {"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "18,20"}
    quiet_node_banner(environ)
    assert environ == {
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "18,20",
        "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
    }
