import pytest

from gpu_insights_agent.contract.xid import (
    EKS_NODE_MONITORING_AGENT_XIDS,
    FATAL_ACTIONS,
    FATAL_XID_CODES,
    XID_CODES,
    XidLineError,
    XidSeverity,
    describe_xid,
    parse_kernel_xid_line,
    scan_kernel_log,
)


def test_fatal_codes_are_the_ones_that_need_action() -> None:
    assert {48, 63, 64, 74, 79, 95, 119, 120} <= FATAL_XID_CODES
    assert not {13, 31, 43, 45} & FATAL_XID_CODES


def test_severity_follows_nvidia_unless_a_note_says_why_not() -> None:
    """NVIDIA's "Resolution Bucket (Immediate Action)"
    (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html): 94 RESTART_APP,
    121 IGNORE, 154 XID_154 are informational; 109 RESET_GPU needs action."""
    for row in XID_CODES.values():
        nvidia_fatal = row.nvidia_action in FATAL_ACTIONS
        if row.note:
            assert (row.severity is XidSeverity.FATAL) != nvidia_fatal, row
            assert row.source == "EKS node monitoring agent"
        else:
            assert (row.severity is XidSeverity.FATAL) == nvidia_fatal, row
            assert row.source == "NVIDIA XID catalogue"
    assert not {94, 121, 154} & FATAL_XID_CODES
    assert {109, 46, 54, 110, 136, 142, 143, 151, 155, 156, 158} <= FATAL_XID_CODES
    assert XID_CODES[63].nvidia_action == "IGNORE"
    assert "EC2" in XID_CODES[63].note


def test_the_fatal_set_matches_the_eks_node_monitoring_agent() -> None:
    """The EKS node monitoring agent's WellKnownXidCodes (aws/eks-node-monitoring-agent):
    node auto repair acts on these; the alarm pages on the same codes, no more, no fewer."""
    assert FATAL_XID_CODES == EKS_NODE_MONITORING_AGENT_XIDS


def test_unknown_code_is_informational_not_an_error() -> None:
    row = describe_xid(9999)
    assert row.severity is XidSeverity.INFO
    assert "9999" in row.meaning


@pytest.mark.parametrize(
    ("line", "pci", "code", "detail"),
    [
        (
            "[ 1234.567890] NVRM: Xid (PCI:0000:53:00): 79, pid=1234, GPU has fallen off the bus.",
            "0000:53:00",
            79,
            "pid=1234, GPU has fallen off the bus.",
        ),
        (
            "Nov 30 08:00:01 ip-10-0-0-1 kernel: NVRM: Xid (PCI:0000:3B:00.0): 13, pid=77, "
            "name=python, Graphics SM Warp Exception",
            "0000:3b:00.0",
            13,
            "pid=77, name=python, Graphics SM Warp Exception",
        ),
        ("NVRM: Xid (PCI:00000000:10:1e): 48\n", "00000000:10:1e", 48, ""),
    ],
)
def test_kernel_lines_are_parsed(line: str, pci: str, code: int, detail: str) -> None:
    parsed = parse_kernel_xid_line(line)
    assert parsed is not None
    assert (parsed.pci_bus_id, parsed.code, parsed.detail) == (pci, code, detail)


def test_other_kernel_lines_are_not_xids() -> None:
    assert parse_kernel_xid_line("NVRM: loading NVIDIA UNIX x86_64 Kernel Module 550.90") is None


@pytest.mark.parametrize(
    "line",
    ["NVRM: Xid (PCI:0000:53:00): seventy-nine", "NVRM: Xid (PCI:zz): 79, x", "NVRM: Xid"],
)
def test_malformed_xid_lines_raise_a_named_error(line: str) -> None:
    with pytest.raises(XidLineError, match="malformed NVRM Xid line"):
        parse_kernel_xid_line(line)


def test_scanning_a_log_skips_malformed_lines_with_a_count() -> None:
    scan = scan_kernel_log(
        [
            "[ 10.0] NVRM: Xid (PCI:0000:53:00): 79, pid=1, GPU has fallen off the bus.",
            "[ 11.0] NVRM: Xid (PCI:0000:53:00): garbled",
            "[ 12.0] eth0: link up",
            "[ 13.0] NVRM: Xid (PCI:0000:54:00): 48, pid=2, DBE",
        ]
    )
    assert [(x.pci_bus_id, x.code) for x in scan.xids] == [("0000:53:00", 79), ("0000:54:00", 48)]
    assert scan.malformed == 1
