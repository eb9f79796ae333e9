"""The EBS ceilings table against the EC2 API's own text: the installed botocore's EC2 service
model documents CreateVolume's valid ``Iops``, ``Throughput`` and ``Size`` ranges per type
(https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVolume.html), so a table
left behind by an AWS change (gp3 went from 16,000 to 80,000 IOPS) fails here."""

import re
from html import unescape

import botocore.session
import pytest

from lambdas.storage_analyzer.ebs_prices import EBS_LIMITS

#: "gp3: 3,000 (default) - 80,000", "gp3a: 1,000 - 80,000", "st1 and sc1: 125 - 16,384": the
#: types (a letter after the digit too: the adaptive types gp3a and io2a), then a range.
TYPE = r"[a-z]+\d?[a-z]?"
RANGE = re.compile(
    rf"((?:{TYPE})(?: and {TYPE})*): ([\d,]+)\s*(?:\(\s*default\s*\))?\s*-\s*([\d,]+)"
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


def test_provisioned_throughput_types_and_range_are_the_ec2_apis() -> None:
    """The API says "Supported for gp3 and gp3a volumes only" (botocore 1.44.18; "gp3 volumes
    only" before gp3a): every type it sells throughput for, and only those, provision it here."""
    text = _documented("Throughput")
    (named,) = re.findall(r"Supported for (.+?) volumes only", text)
    sold = set(re.split(r",? and |, ", named))
    assert {t for t, lim in EBS_LIMITS.items() if lim.min_mibps} == sold
    (low, high) = re.findall(r"Valid Range: (\d+) - (\d+) MiB/s", text)[0]
    for name in sold:
        assert (EBS_LIMITS[name].min_mibps, EBS_LIMITS[name].max_mibps) == (int(low), int(high))


@pytest.mark.parametrize("volume_type", sorted(EBS_LIMITS))
def test_every_types_largest_size_is_the_ec2_apis(volume_type: str) -> None:
    assert EBS_LIMITS[volume_type].max_size_gib == _ranges("Size")[volume_type][1]
