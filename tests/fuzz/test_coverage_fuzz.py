"""The coverage-guided fuzz targets (tests/fuzz/targets): each over its seed corpus and the
inputs that once crashed it (tests/fuzz/regressions/<target>/), directly; then each fuzzed
by atheris for a few seconds in its own process, which must end without a finding and having
run inputs."""

from __future__ import annotations

import importlib
import re
import struct
from pathlib import Path
from types import ModuleType

import pytest

from minibroker.log.checkpoints import (
    CorruptCheckpointError,
    read_offset_checkpoint,
    read_partition_metadata,
    read_properties,
)
from minibroker.txn.state import TxnState, TxnTransit
from minibroker.txn.state_log import TxnRecordError, decode_value, encode_value
from tests.fuzz.run import main, run_target
from tests.fuzz.targets import TARGETS

REGRESSIONS = Path(__file__).parent / "regressions"
FUZZ_SECONDS = 5


def _target(name: str) -> ModuleType:
    return importlib.import_module(f"tests.fuzz.targets.{name}")


@pytest.mark.parametrize("name", TARGETS)
def test_target_passes_its_seed_corpus(name: str) -> None:
    target = _target(name)
    seeds = target.seeds()
    assert seeds
    for seed in seeds:
        target.test_one_input(seed)


@pytest.mark.parametrize(
    "path", sorted(REGRESSIONS.glob("*/*")), ids=lambda path: f"{path.parent.name}/{path.name}"
)
def test_once_crashing_input_is_now_handled(path: Path) -> None:
    _target(path.parent.name).test_one_input(path.read_bytes())


def test_transaction_state_tagged_field_of_the_wrong_size_is_a_record_error() -> None:
    transit = TxnTransit(7, -1, 2, -1, 60000, TxnState.ONGOING, frozenset(), 10, 20)
    value = encode_value(transit, version=1)
    assert value.endswith(b"\x00")  # no tagged fields: add tag 2 (the client's TV), 1 byte
    with pytest.raises(TxnRecordError, match="tagged field 2 has 1 bytes"):
        decode_value(value[:-1] + b"\x01\x02\x01\x07")
    good = value[:-1] + b"\x01\x02\x02" + struct.pack(">h", 2)
    assert decode_value(good).client_transaction_version == 2


def test_files_that_are_not_utf8_are_corrupt_checkpoints(tmp_path: Path) -> None:
    (tmp_path / "checkpoint").write_bytes(b"0\n1\nt\xff 0 5\n")
    (tmp_path / "partition.metadata").write_bytes(b"version: 0\ntopic_id: \x99\n")
    (tmp_path / "meta.properties").write_bytes(b"node.id=1\ncluster.id=\x99\n")
    with pytest.raises(CorruptCheckpointError, match="checkpoint"):
        read_offset_checkpoint(tmp_path / "checkpoint")
    with pytest.raises(CorruptCheckpointError, match=r"partition\.metadata"):
        read_partition_metadata(tmp_path)
    with pytest.raises(CorruptCheckpointError, match=r"meta\.properties"):
        read_properties(tmp_path / "meta.properties")


@pytest.mark.slow
@pytest.mark.parametrize("name", TARGETS)
def test_fuzzing_finds_nothing_in_a_short_run(name: str, tmp_path: Path) -> None:
    result = run_target(name, FUZZ_SECONDS, tmp_path)
    assert result.artifacts == (), result.output[-4000:]
    assert result.returncode == 0, result.output[-4000:]
    assert result.inputs > 0, result.output[-4000:]


@pytest.mark.slow
def test_the_runner_prints_inputs_per_target_and_their_sum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--seconds", "1", "--target", "compression", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    ran = re.search(r"^compression: (\d+) inputs in \d+ s, ok$", out, re.MULTILINE)
    assert ran is not None, out
    assert int(ran.group(1)) > 0
    assert f"total: {ran.group(1)} inputs, 1 targets, 1 s each" in out
    assert any((tmp_path / "compression" / "corpus").iterdir())
