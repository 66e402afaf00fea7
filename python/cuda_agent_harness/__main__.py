"""Command line: `python3 -m cuda_agent_harness JOB --spec SPEC.json` (see docs/harness-protocol.md).

Exit status 0: the result was written. 2: the arguments or the spec file are unusable (nothing written).
The process ends with os._exit after the result is written, so threads or exit handlers left behind by
candidate code cannot keep it alive or change anything afterwards.
"""

from __future__ import annotations

import argparse
import os
import sys

from .runner import JOB_MODULES, run_job
from .spec import SpecError, read_spec


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m cuda_agent_harness",
                                     description="Run one cuda-agent harness job.")
    parser.add_argument("job", choices=sorted(JOB_MODULES), help="the job to run")
    parser.add_argument("--spec", required=True, help="path of the job's spec JSON")
    return parser.parse_args(argv)


JOBS_RUNNING_CANDIDATE_CODE = ("candidate", "profile")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        spec = read_spec(args.spec)
    except SpecError as exc:
        print(f"cuda_agent_harness: {exc}", file=sys.stderr)
        return 2
    if args.job in JOBS_RUNNING_CANDIDATE_CODE:
        # The spec holds secrets (the timing seed, which timed calls are checked): once read, the file
        # goes, so candidate code cannot open it through sys.argv.
        try:
            os.unlink(args.spec)
        except OSError:
            pass
    run_job(args.job, spec)
    return 0


def _exit_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - candidate code may have closed or replaced the stream
            pass
    os._exit(code)


if __name__ == "__main__":
    _exit_now(main())
