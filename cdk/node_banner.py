"""Quiet jsii's Node version banner before aws_cdk starts its Node process.

jsii relays each line its Node process writes to stderr that is not one of its JSON messages
with ``print(line)`` of the raw bytes (jsii/_kernel/providers/process.py, ``stderr_sink``), so
on Node 20 its end-of-life banner printed as Python byte strings (``b'!!  Node 20 is
end-of-life ...'``) on every synth and demo. The child inherits the environment when the
kernel starts; jsii-runtime reads these variables to leave the banner out (the Makefile sets
the same two for its own commands). A value the user set is kept.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from typing import Final

#: jsii's variables and the values that acknowledge the warnings: any deprecated Node, and
#: Node 20's end of life (the oldest Node aws-cdk-lib still starts on).
QUIET: Final = {
    "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
}


def quiet_node_banner(environ: MutableMapping[str, str] = os.environ) -> None:
    for name, value in QUIET.items():
        environ.setdefault(name, value)
