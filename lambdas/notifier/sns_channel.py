"""The SNS channel: critical incidents to the critical topic, the rest to the warning topic,
each as plain text for email and the Amazon Q Developer custom notification for HTTPS
subscribers (``notification.publish_arguments``)."""

from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, ReadTimeoutError

from lambdas.notifier.channels import ChannelError, ChannelTimeoutError, Delivery
from lambdas.notifier.notification import Incident, publish_arguments

#: The first channel: its ledger keys are the incident keys themselves, as they were written
#: before there were channels (sent_ledger.claim_key).
SNS: Final = "sns"


class SnsChannel:
    def __init__(self, sns: Any, *, critical_topic_arn: str, warning_topic_arn: str) -> None:
        self.sns = sns
        self.critical_topic_arn = critical_topic_arn
        self.warning_topic_arn = warning_topic_arn

    @property
    def name(self) -> str:
        return SNS

    def topic_for(self, incident: Incident) -> str:
        if incident.severity == "critical":
            return self.critical_topic_arn
        return self.warning_topic_arn

    def deliver(self, incident: Incident, *, deadline_s: float | None = None) -> Delivery:
        """Publish it; ``deadline_s`` is not used: the client's config bounds the call."""
        topic = self.topic_for(incident)
        try:
            response = self.sns.publish(**publish_arguments(incident, topic))
        except (ConnectTimeoutError, ReadTimeoutError) as err:
            # Its attempts all timed out: the handler skips SNS for the rest of the invocation.
            raise ChannelTimeoutError(f"SNS topic {topic}: {err}") from err
        except (ClientError, BotoCoreError) as err:
            raise ChannelError(f"SNS topic {topic}: {err}") from err
        return Delivery(SNS, str(response.get("MessageId", "")))
