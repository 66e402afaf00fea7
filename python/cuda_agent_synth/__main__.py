"""Command line: `python3 -m cuda_agent_synth --spec SPEC.json`, the `synth` job (job.py) run as the
harness runs its jobs (docs/harness-protocol.md): the result goes to the spec's result_path.

Exit status 0: the result was written. 2: the arguments or the spec file are unusable (nothing written).
The process ends with os._exit after the result is written, as the harness's does, so worker processes
or exit handlers left behind cannot keep it alive.
"""

from __future__ import annotations

import argparse
import os
import sys

from cuda_agent_harness.runner import run_job_module
from cuda_agent_harness.spec import SpecError, read_spec

JOB_MODULE = "cuda_agent_synth.job"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m cuda_agent_synth",
                                     description="Run cuda-agent's synth job.")
    parser.add_argument("--spec", required=True, help="path of the job's spec JSON")
    args = parser.parse_args(argv)
    try:
        spec = read_spec(args.spec)
    except SpecError as exc:
        print(f"cuda_agent_synth: {exc}", file=sys.stderr)
        return 2
    run_job_module(JOB_MODULE, spec)
    return 0


def _exit_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a stream closed or replaced by a program under test
            pass
    os._exit(code)


if __name__ == "__main__":
    _exit_now(main())
