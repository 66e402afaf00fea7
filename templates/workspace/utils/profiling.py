"""python3 -m utils.profiling — time the extension against PyTorch.

Fixed workspace infrastructure; do not modify. Builds and verifies the
candidate, then times the reference in eager mode, under torch.compile and
the candidate, and prints the reward the current workspace would get.
"""

import sys

from utils import exit_status, print_failure, run_judge, verify_reason


def _time_us(timing, key):
    entry = timing.get(key)
    if isinstance(entry, dict) and isinstance(entry.get("time_us"), (int, float)):
        return float(entry["time_us"])
    return None


def _format_us(value):
    return "n/a" if value is None else f"{value:.3f}us"


def _format_speedup(value):
    return f"{value:.2f}x" if isinstance(value, (int, float)) else "n/a"


def main():
    status, result = run_judge("profile")
    if result is None:
        return exit_status(status, None)
    if not result.get("correct"):
        print_failure(result)
        if result.get("stage") not in ("static", "build", "task"):
            print(f"[FAIL] verify failed: {verify_reason(result)}")
        if result.get("reward") is not None:
            print(f"Reward: {result['reward']}")
        return exit_status(status, result)
    timing = result.get("timing") or {}
    eager = _time_us(timing, "eager")
    compiled = _time_us(timing, "compile")
    candidate = _time_us(timing, "candidate")
    print(f"Torch Baseline: {_format_us(eager)}, Torch Compile: {_format_us(compiled)}, "
          f"CUDA Extension: {_format_us(candidate)}")
    print(f"Speedup vs eager: {_format_speedup(timing.get('speedup_vs_eager'))}, "
          f"Speedup vs compile: {_format_speedup(timing.get('speedup_vs_compile'))}, "
          f"Reward: {result.get('reward')}")
    kernels = result.get("kernels") or []
    if kernels:
        print("Top kernels of the extension:")
        for kernel in kernels[:5]:
            if isinstance(kernel, dict):
                name = kernel.get("name", "?")
                total = kernel.get("total_us")
                calls = kernel.get("calls")
                total_text = f"{total:.3f}us" if isinstance(total, (int, float)) else "?"
                print(f"  {total_text:>14}  {calls if calls is not None else '?':>4} calls  {name}")
    return exit_status(status, result)


if __name__ == "__main__":
    sys.exit(main())
