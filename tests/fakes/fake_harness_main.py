"""A fake of `python3 -m cuda_agent_harness JOB --spec SPEC` (python/cuda_agent_harness/__main__.py) for
the C++ client's tests (src/harness/client_test.cc), installed as the __main__ module of a temporary
home. It reads the spec like the real harness and, per job name, ends the way a job can end:

  ok          writes {"ok": true, "echo": spec["echo"]} to result_path and exits 0
  fail        writes {"ok": false, "error_kind": "task", "reason": "..."}; stderr has 30 lines
  hang        sleeps (the watchdog must end it)
  die         writes half a result, then kills itself with SIGKILL
  not_json    writes text that is not JSON
  not_object  writes a JSON list
"""

import json
import os
import signal
import sys
import time


def main():
    job, spec_path = sys.argv[1], sys.argv[3]
    with open(spec_path) as f:
        spec = json.load(f)
    result_path = spec["result_path"]
    if job == "ok":
        result = {"ok": True, "error_kind": None, "reason": "", "echo": spec.get("echo")}
        with open(result_path, "w") as f:
            json.dump(result, f)
    elif job == "fail":
        for k in range(30):
            print(f"stderr line {k}", file=sys.stderr)
        with open(result_path, "w") as f:
            json.dump({"ok": False, "error_kind": "task", "reason": "the task's forward raised"}, f)
    elif job == "hang":
        print("hanging", flush=True)
        time.sleep(600)
    elif job == "die":
        with open(result_path, "w") as f:
            f.write('{"ok": tr')
            f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    elif job == "not_json":
        with open(result_path, "w") as f:
            f.write("Traceback (most recent call last): not a result")
    elif job == "not_object":
        with open(result_path, "w") as f:
            json.dump([1, 2, 3], f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
