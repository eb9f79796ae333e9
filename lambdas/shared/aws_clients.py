"""Clients for Lambda handlers and the CLI: adaptive retries, so throttling slows a run down
instead of failing it. Created on first use, never at import time."""

import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

from botocore.client import BaseClient
from botocore.config import Config
from botocore.utils import parse_timestamp

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 10
RETRIES = Config(
    retries={"mode": "adaptive", "max_attempts": MAX_ATTEMPTS}, connect_timeout=5, read_timeout=30
)


#: The command line's clients: someone is waiting, so an endpoint that does not answer is said
#: in under a minute (two attempts of at most 5 s to connect and 20 s to read) rather than
#: after a Lambda's patient retries.
INTERACTIVE = Config(
    retries={"mode": "standard", "max_attempts": 2}, connect_timeout=5, read_timeout=20
)


#: Every service a handler makes a client for; ``ClientCache`` refuses any other, so the
#: functional tests fail on a handler that reaches further. The SDK layer
#: (cdk/constructs/sdk_layer.py) ships botocore's models for these services only.
HANDLER_SERVICES = frozenset(
    {"cloudwatch", "dynamodb", "ec2", "events", "logs", "s3", "sns", "sqs", "ssm"}
)


def warn_if_slow_protocol(cloudwatch: Any) -> str:
    """The protocol botocore speaks to CloudWatch, warned about when it is not JSON: a botocore
    older than 1.42.7 (a runtime's own, shadowing the SDK layer) parses GetMetricData in the
    Query protocol at about 20 times the CPU per datapoint, past the analyzers' CPU goals."""
    model = cloudwatch.meta.service_model
    protocol = str(getattr(model, "resolved_protocol", None) or model.protocol)
    if protocol != "json":
        import botocore

        log.warning(
            "botocore %s speaks %s to CloudWatch, not json: GetMetricData parsing costs about "
            "20 times the CPU; the function should load the SDK layer's botocore",
            botocore.__version__,
            protocol,
        )
    return protocol


class NotABotocoreClientError(TypeError):
    """Something other than a botocore client was handed to a handler."""


class UnlistedServiceError(ValueError):
    """A handler asked for a service outside ``HANDLER_SERVICES``: the Lambda layer would not
    hold its model, so the function would fail where the tests passed."""


def epoch_timestamp(value: Any) -> datetime:
    """The timestamps the JSON protocols send as epoch seconds (GetMetricData's, one per
    datapoint) become UTC datetimes in under a microsecond; botocore's default parser takes
    tens of microseconds each (it tries the local zone first, through dateutil), which was
    most of a fleet's CPU. Anything else is parsed as botocore does; the value is equal."""
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    return parse_timestamp(value)


def new_session(**kwargs: Any) -> Any:
    """A boto3 session whose clients parse timestamps with ``epoch_timestamp``: botocore's
    documented hook for it, the response parser factory's defaults, as the AWS CLI sets them
    (aws/aws-cli awscli/customizations/scalarparse.py). The one session of the handlers and
    of the command line (``gpu-insights analyze``, ``backtest``, ``preflight``, the demo), so
    a run from a laptop costs the CPU it costs in Lambda."""
    import boto3
    import botocore.session

    core = botocore.session.get_session()
    core.get_component("response_parser_factory").set_parser_defaults(
        timestamp_parser=epoch_timestamp
    )
    return boto3.Session(botocore_session=core, **kwargs)


def client(service: str, *, session: Any = None, config: Config = RETRIES) -> Any:
    if session is None:
        session = new_session()
    # The stubs type each service name as a literal; the service is a parameter here.
    return cast(Any, session).client(service, config=config)


class ClientCache(dict[str, Any]):
    """A handler's clients, each made on first use and kept for the warm container; tests and
    the demo put moto-backed clients in under the service's name.

    Only botocore clients get in: a wrapper or stand-in would accept calls that botocore
    refuses against the service model, and a test would pass where AWS fails.

    ``config`` is the clients' (``RETRIES`` unless a handler bounds its calls tighter)."""

    def __init__(self, config: Config = RETRIES) -> None:
        super().__init__()
        self.config = config

    def __call__(self, service: str) -> Any:
        _listed(service)
        if service not in self:
            self[service] = client(service, config=self.config)
            if service == "cloudwatch":
                warn_if_slow_protocol(self[service])
        return self[service]

    def __setitem__(self, service: str, value: Any) -> None:
        _listed(service)
        if not isinstance(value, BaseClient):
            raise NotABotocoreClientError(
                f"the {service} client is a {type(value).__name__}, not a botocore client: "
                "answer what moto lacks with botocore's Stubber or an event hook on a real client"
            )
        super().__setitem__(service, value)

    def update(self, *args: Any, **kwargs: Any) -> None:
        pairs: Iterable[tuple[str, Any]] = cast(Mapping[str, Any], args[0]).items() if args else ()
        for service, value in [*pairs, *kwargs.items()]:
            self[service] = value

    def setdefault(self, service: str, default: Any = None) -> Any:
        if service not in self:
            self[service] = default
        return self[service]


def _listed(service: str) -> None:
    if service not in HANDLER_SERVICES:
        raise UnlistedServiceError(
            f"no handler may use the {service} client: the SDK layer holds the models of "
            f"{', '.join(sorted(HANDLER_SERVICES))} only; add {service} to HANDLER_SERVICES "
            "in lambdas/shared/aws_clients.py"
        )
