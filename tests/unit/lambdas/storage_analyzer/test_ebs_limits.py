"""The EBS ceilings table against the EC2 API's own text: the installed botocore's EC2 service
model documents CreateVolume's valid ``Iops``, ``Throughput`` and ``Size`` ranges per type
(https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVolume.html), so a table
left behind by an AWS change (gp3 went from 16,000 to 80,000 IOPS) fails here."""

import re
from html import unescape

import botocore.session
import pytest

from lambdas.storage_analyzer.ebs_prices import EBS_LIMITS

#: "gp3: 3,000 (default) - 80,000", "st1 and sc1: 125 - 16,384": the types, then a range.
RANGE = re.compile(
    r"((?:[a-z]+\d?)(?: and [a-z]+\d?)*): ([\d,]+)\s*(?:\(\s*default\s*\))?\s*-\s*([\d,]+)"
)


def _documented(member: str) -> str:
    model = botocore.session.get_session().get_service_model("ec2")
    shape = model.operation_model("CreateVolume").input_shape
    assert shape is not None
    text = re.sub(r"<[^>]+>", " ", shape.members[member].documentation)
    return re.sub(r"\s+", " ", unescape(text))


def _ranges(member: str) -> dict[str, tuple[int, int]]:
    ranges = {}
    for types, low, high in RANGE.findall(_documented(member)):
        for name in types.split(" and "):
            ranges[name] = (int(low.replace(",", "")), int(high.replace(",", "")))
    return ranges


def test_provisioned_iops_ranges_are_the_ec2_apis() -> None:
    documented = _ranges("Iops")
    assert set(documented) == {t for t, lim in EBS_LIMITS.items() if lim.provisions_iops}
    for name, (low, high) in documented.items():
        assert (EBS_LIMITS[name].min_iops, EBS_LIMITS[name].max_iops) == (low, high), name


def test_gp3_throughput_range_is_the_ec2_apis() -> None:
    text = _documented("Throughput")
    assert "gp3 volumes only" in text
    (low, high) = re.findall(r"Valid Range: (\d+) - (\d+) MiB/s", text)[0]
    gp3 = EBS_LIMITS["gp3"]
    assert (gp3.min_mibps, gp3.max_mibps) == (int(low), int(high))
    assert [t for t, lim in EBS_LIMITS.items() if lim.min_mibps] == ["gp3"]


@pytest.mark.parametrize("volume_type", sorted(EBS_LIMITS))
def test_every_types_largest_size_is_the_ec2_apis(volume_type: str) -> None:
    assert EBS_LIMITS[volume_type].max_size_gib == _ranges("Size")[volume_type][1]
