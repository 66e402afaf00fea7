"""python3 -m utils.ncu — why your kernels are as fast as they are (Nsight Compute).

Fixed workspace infrastructure; do not modify. Builds the extension, runs
ModelNew's forward a few times unprofiled and once under Nsight Compute (ncu),
and prints for each of YOUR kernels (torch's are left out): its duration, the
share of peak compute and memory throughput it reaches, achieved vs
theoretical occupancy and what limits it, its DRAM bytes, whether it is
memory-, compute- or latency-bound, and a one-line hint; then where the
kernels sit on the GPU's roofline. Takes seconds to a minute.

ncu locks the GPU's clocks and replays every kernel: its times are NOT
comparable with utils.profiling's, and they never count for the reward.
`--json` prints the report as JSON. The judge binary does the work (see
utils/__init__.py for how it is found); the exit status is the binary's:
0 a report, 1 the candidate could not be profiled, 4 ncu is unavailable here
(no GPU, not installed, counters not permitted) — the message says which.
"""

import subprocess
import sys

from utils import EXIT_INTERNAL, ROOT, device, find_binary

USAGE = "usage: python3 -m utils.ncu [--json]"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    unknown = [a for a in argv if a != "--json"]
    if unknown:
        print(f"{USAGE}\nunknown argument: {unknown[0]}", file=sys.stderr)
        return 2
    binary = find_binary()
    if not binary:
        print("error: judge binary not found (set CUDA_AGENT_BIN or install "
              "cuda-agent on PATH)", file=sys.stderr)
        return EXIT_INTERNAL
    command = [binary, "profile", "--ncu", "--task", "model.py", "--candidate", ".",
               "--device", device()]
    if "--json" in argv:
        command.append("--json")
    try:
        proc = subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL)
    except OSError as exc:
        print(f"error: cannot run {binary}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
