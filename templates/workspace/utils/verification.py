"""python3 -m utils.verification — check model_new.py against model.py.

Fixed workspace infrastructure; do not modify. Builds the extension and runs
the judge's correctness checks (fresh random inputs from get_inputs() on each
check; outputs compared with the judge's tolerance).
"""

import sys

from utils import exit_status, print_checks, print_failure, run_judge, verify_reason


def main():
    status, result = run_judge("verify")
    if result is None:
        return exit_status(status, None)
    print_failure(result)
    if result.get("stage") in ("static", "build", "task"):
        return exit_status(status, result)
    print_checks(result)
    if result.get("correct"):
        print("[PASS] verify success")
    else:
        print(f"[FAIL] verify failed: {verify_reason(result)}")
    return exit_status(status, result)


if __name__ == "__main__":
    sys.exit(main())
