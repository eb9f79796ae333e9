"""``gpu-insights explain-failure``: the cause, the cited lines and what to do; exit 0 for a
named cause, 1 for none, 2 for a log that cannot be read."""

import io
import json
import os
import sys
from pathlib import Path

import pytest

from cli import explain_failure
from cli.main import main
from tests.unit.reference_data import failure_log_corpus

SAMPLES = {s.id: s for s in failure_log_corpus()}


def log_file(tmp_path: Path, sample_id: str) -> Path:
    path = tmp_path / f"{sample_id}.log"
    path.write_text(SAMPLES[sample_id].text)
    return path


def test_names_the_cause_cites_the_line_and_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["explain-failure", "--log", str(log_file(tmp_path, "xid-79-then-nccl-timeout"))]) == 0
    )
    out = capsys.readouterr().out
    assert out.splitlines()[:3] == [
        "Cause: XID 79 on GPU 0000:44:00: GPU has fallen off the bus (gpu_xid)",
        "Lines that decided it:",
        "  2: NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus",
    ]
    assert "Also in the log: nccl_timeout" in out
    assert "What to do: " in out
    assert out.rstrip().endswith("Read 2 lines.")


def test_json_is_one_object_with_cause_lines_signature_and_recommendation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = log_file(tmp_path, "cuda-oom-traceback-last")
    assert main(["explain-failure", "--log", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["cause"] == "cuda_out_of_memory"
    assert [line["number"] for line in document["lines"]] == [2]
    assert document["signature"].startswith("torch.cuda.OutOfMemoryError: CUDA out of memory.")
    assert "micro-batch" in document["recommendation"]
    assert document["truncated"] is False


def test_reads_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = SAMPLES["spot-nth-v1"].text.encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["explain-failure", "--log", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cause"] == "spot_interruption"


def test_no_cause_prints_the_report_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain-failure", "--log", str(log_file(tmp_path, "nccl-info-only"))]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("Cause: No known cause in the lines read (unknown)")
    assert captured.err == ""


def test_a_huge_log_is_read_from_its_end_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(explain_failure, "MAX_BYTES", 400)
    path = tmp_path / "big.log"
    early = SAMPLES["disk-full-safetensors"].text  # cut off: only the end is read
    filler = "step 1 loss 2.5\n" * 100
    path.write_text(early + filler + SAMPLES["xid-79-nvsentinel"].text)
    assert main(["explain-failure", "--log", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["cause"] == "gpu_xid"
    assert document["truncated"] is True
    assert document["bytes_total"] == path.stat().st_size
    assert document["bytes_read"] <= 400
    assert main(["explain-failure", "--log", str(path)]) == 0
    assert f"of {path.stat().st_size / 1024 / 1024:,.1f} MiB)." in capsys.readouterr().out


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "absent.log", "no such file"),
        (lambda p: p, "is a folder, not a log"),
        (lambda p: (p / "core").write_bytes(b"\x7fELF\x00\x01") and p / "core", "is binary"),
    ],
)
def test_a_log_that_cannot_be_read_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, message: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    assert main(["explain-failure", "--log", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"gpu-insights explain-failure: --log {path}")
    assert message in captured.err
    assert captured.err.count("\n") == 1


#: The user without privileges (Debian's nobody): who the unreadable-log test reads as, where
#: the suite runs as root (as CI does), since root reads any file.
NOBODY = 65534


def _without_root(path: Path) -> str:
    """What the command prints on stderr for ``--log path``, run in a child process that has
    dropped root's privileges (setgid/setuid to nobody) before it reads."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            sys.stderr = os.fdopen(write_end, "w")  # pytest captures the parent's
            status = main(["explain-failure", "--log", str(path)])
            sys.stderr.flush()
            os._exit(status)
        except BaseException:
            os._exit(99)
    os.close(write_end)
    with os.fdopen(read_end) as stream:
        err = stream.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 2, err
    return err


def test_an_unreadable_log_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log_file(tmp_path, "xid-79-nvsentinel")
    path.chmod(0)
    if os.geteuid() == 0:
        err = _without_root(path)
    else:
        assert main(["explain-failure", "--log", str(path)]) == 2
        err = capsys.readouterr().err
    assert f"--log {path} cannot be read: Permission denied" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("stdin", [False, True])
def test_a_huge_logs_cited_line_is_numbered_as_the_whole_file_numbers_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stdin: bool,
) -> None:
    """Only the last 64 KiB are read, yet the OOM on line 30,002 is cited as line 30,002, not
    by its place in the window read (from a file, which seeks, and from standard input)."""
    monkeypatch.setattr(explain_failure, "MAX_BYTES", 64 * 1024)
    oom = SAMPLES["cuda-oom-traceback-last"].lines[-1]
    filler = "".join(f"step {n} loss 2.5\n" for n in range(30_000))
    data = ("header\n" + filler + oom + "\n" + "step done\n" * 10).encode()
    path = tmp_path / "big.log"
    path.write_bytes(data)
    if stdin:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["explain-failure", "--log", "-" if stdin else str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["truncated"] is True
    assert [line["number"] for line in document["lines"]] == [30_002]
    assert data.decode().splitlines()[30_002 - 1] == oom


def test_terminal_escapes_in_the_log_never_reach_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A coloured traceback line, an OSC 8 hyperlink, a title change, a backspace: the cause is
    still named, and what is printed holds no escape or control character."""
    oom = SAMPLES["cuda-oom-traceback-last"].lines[-1]
    path = tmp_path / "coloured.log"
    path.write_text(
        "\x1b]0;pwned\x07step 1\n"
        f"\x1b[31m{oom}\x1b[0m \x1b]8;;http://evil.example\x07docs\x1b]8;;\x07\x08\x1bc\n"
    )
    assert main(["explain-failure", "--log", str(path)]) == 0
    out = capsys.readouterr().out
    assert "cuda_out_of_memory" in out
    assert f"  2: {oom} docs" in out.splitlines()
    assert not any(ch in out for ch in "\x1b\x07\x08\x9b\x9d")


#: A JSON value nested deeper than Python's stack: ``json.loads`` raises RecursionError.
DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deeply_nested_json_line_is_a_line_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.log"
    path.write_text('{"log": ' + DEEP + "}\nRuntimeError: CUDA error: out of memory\n")
    assert main(["explain-failure", "--log", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cause"] == "cuda_out_of_memory"
    path.write_text('{"events": ' + DEEP + "}")  # an export's shape, too deep to read
    assert main(["explain-failure", "--log", str(path)]) == 1
    assert capsys.readouterr().out.endswith("Read 1 line.\n")
