"""Run the coverage-guided fuzz targets (tests/fuzz/targets), each in its own process under
atheris (libFuzzer) with a time budget, and print the inputs each ran.

    python -m tests.fuzz.run [--minutes N | --seconds N] [--target NAME ...] [--dir DIR]

Per target, DIR/NAME holds `seeds` (written from the target's `seeds()`), `corpus` (what
libFuzzer keeps), `scratch` (the target's temporary files) and any `crash-*`/`timeout-*`/
`oom-*` input. Without --dir a temporary directory (on /dev/shm when there is one) is used and
removed. Exits 1 if any target found a crash, a hang or an input
exceeding the memory limit.
"""

from __future__ import annotations

import argparse
import importlib
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.targets import TARGETS

RSS_LIMIT_MB = 2048
INPUT_TIMEOUT_S = 10
_DONE = re.compile(r"^Done (\d+) runs in (\d+) second", re.MULTILINE)
_ARTIFACTS = ("crash-*", "timeout-*", "oom-*", "leak-*")


@dataclass(frozen=True)
class TargetRun:
    name: str
    returncode: int
    inputs: int
    seconds: int
    artifacts: tuple[Path, ...]
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.artifacts and self.inputs > 0


def run_target(name: str, seconds: int, workdir: Path) -> TargetRun:
    """Fuzz one target for `seconds` in a child process; its inputs run and what it left."""
    target_dir = workdir / name
    target_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "tests.fuzz.run", "--child", name]
    command += ["--seconds", str(seconds), "--dir", str(workdir)]
    proc = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
    output = proc.stdout + proc.stderr
    done = _DONE.search(output)
    artifacts = tuple(sorted(p for pattern in _ARTIFACTS for p in target_dir.glob(pattern)))
    return TargetRun(
        name,
        proc.returncode,
        int(done.group(1)) if done else 0,
        int(done.group(2)) if done else 0,
        artifacts,
        output,
    )


def _fuzz_in_this_process(name: str, seconds: int, workdir: Path) -> None:
    import atheris

    target_dir = workdir / name
    # libFuzzer ends the process without running atexit: the targets' scratch files stay here.
    scratch = target_dir / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    tempfile.tempdir = str(scratch)
    with atheris.instrument_imports(include=["minibroker"]):
        target = importlib.import_module(f"tests.fuzz.targets.{name}")
    seeds_dir, corpus_dir = target_dir / "seeds", target_dir / "corpus"
    seeds_dir.mkdir(parents=True, exist_ok=True)
    corpus_dir.mkdir(parents=True, exist_ok=True)
    for index, seed in enumerate(target.seeds()):
        (seeds_dir / f"seed-{index:04d}").write_bytes(seed)
    atheris.Setup(
        [
            sys.argv[0],
            f"-max_total_time={seconds}",
            f"-rss_limit_mb={RSS_LIMIT_MB}",
            f"-timeout={INPUT_TIMEOUT_S}",
            f"-artifact_prefix={target_dir}/",
            "-print_final_stats=1",
            str(corpus_dir),
            str(seeds_dir),
        ],
        target.test_one_input,
    )
    atheris.Fuzz()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/fuzz", description=__doc__.split("\n\n")[0])
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--minutes", type=float, help="time budget per target (default 1)")
    budget.add_argument("--seconds", type=int, help="time budget per target, in seconds")
    parser.add_argument("--target", action="append", choices=TARGETS, help="default: all")
    parser.add_argument("--dir", type=Path, help="corpus and crash directory (default: temp)")
    parser.add_argument("--child", choices=TARGETS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else round(60 * (args.minutes or 1))
    if args.child is not None:
        _fuzz_in_this_process(args.child, seconds, args.dir)
        return 0
    if args.dir is not None:
        return _run_all(args.target or TARGETS, seconds, args.dir)
    # On tmpfs when there is one: the segment target's recovery fsyncs.
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(
        prefix="minibroker-fuzz-", dir=shm if shm.is_dir() else None
    ) as workdir:
        return _run_all(args.target or TARGETS, seconds, Path(workdir))


def _run_all(names: tuple[str, ...] | list[str], seconds: int, workdir: Path) -> int:
    total = 0
    failed = False
    for name in names:
        result = run_target(name, seconds, workdir)
        total += result.inputs
        status = "ok" if result.ok else f"FAILED (exit {result.returncode})"
        print(f"{name}: {result.inputs} inputs in {result.seconds} s, {status}", flush=True)
        if not result.ok:
            failed = True
            print(result.output[-4000:], file=sys.stderr)
            for artifact in result.artifacts:
                print(f"  input kept: {artifact}", file=sys.stderr)
    print(f"total: {total} inputs, {len(names)} targets, {seconds} s each")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
