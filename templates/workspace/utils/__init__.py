"""Protected workspace commands (fixed infrastructure; do not modify).

These are thin front-ends: the judge binary `cuda-agent` does the building,
verification and profiling. This module finds the binary and the workspace
settings, runs the judge and turns its JSON result into short text lines.

The binary is, in order: $CUDA_AGENT_BIN; the key "binary" of
.cuda-agent/workspace.json in the workspace root; `cuda-agent` on PATH.
The device is the key "device" of that file (default "cuda").
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG_PATH = ROOT / ".cuda-agent" / "workspace.json"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INTERNAL = 4


def load_config():
    """load_config returns the workspace settings, {} when there are none."""
    try:
        with open(CONFIG_PATH, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def find_binary(config=None):
    """find_binary returns the path of the judge binary, or None."""
    env = os.environ.get("CUDA_AGENT_BIN")
    if env:
        return env
    config = load_config() if config is None else config
    configured = config.get("binary")
    if isinstance(configured, str) and configured:
        return configured
    return shutil.which("cuda-agent")


def device(config=None):
    """device returns "cuda" or "cpu" for this workspace."""
    config = load_config() if config is None else config
    value = config.get("device")
    return value if value in ("cuda", "cpu") else "cuda"


def print_shell_config():
    """print_shell_config prints BIN and DEVICE lines for utils/compile.sh."""
    config = load_config()
    print(find_binary(config) or "")
    print(device(config))


def run_judge(until):
    """run_judge runs `judge --until UNTIL --json` on this workspace.

    Returns (exit_status, result): result is the parsed JudgeResult, or None
    when the judge gave none (the status then says why).
    """
    binary = find_binary()
    if not binary:
        print("error: judge binary not found (set CUDA_AGENT_BIN or install "
              "cuda-agent on PATH)", file=sys.stderr)
        return EXIT_INTERNAL, None
    argv = [binary, "judge", "--task", "model.py", "--candidate", ".",
            "--device", device(), "--until", until, "--json"]
    try:
        proc = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE,
                              stdin=subprocess.DEVNULL)
    except OSError as exc:
        print(f"error: cannot run {binary}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL, None
    text = proc.stdout.decode("utf-8", errors="replace")
    try:
        result = json.loads(text)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        if text.strip():
            print(text.strip())
        status = proc.returncode if proc.returncode > 0 else EXIT_INTERNAL
        return status, None
    return proc.returncode, result


def print_failure(result):
    """print_failure prints why a candidate failed before or in verification."""
    stage = result.get("stage")
    reason = result.get("reason") or "unknown reason"
    if stage in ("static", "build", "task"):
        print(f"[FAIL] {reason}")
    build = result.get("build") or {}
    if stage == "build":
        errors = build.get("errors") or []
        for error in errors:
            print(format_compiler_error(error))
        if not errors and build.get("log_tail"):
            print(build["log_tail"].rstrip())


def format_compiler_error(error):
    """format_compiler_error renders one build error as file:line:col: message."""
    where = str(error.get("file") or "?")
    if error.get("line"):
        where += f":{error['line']}"
        if error.get("column"):
            where += f":{error['column']}"
    return f"{where}: {error.get('message', '').strip()}"


def print_checks(result):
    """print_checks prints one PASS/FAIL line per verification check."""
    checks = (result.get("verify") or {}).get("checks") or []
    total = len(checks)
    for position, check in enumerate(checks, start=1):
        if check.get("ok"):
            print(f"[PASS] check {position}/{total}")
        else:
            detail = check.get("reason") or "mismatch"
            print(f"[FAIL] check {position}/{total}: {detail}")


def verify_reason(result):
    """verify_reason returns the judge's reason without a leading
    "verification failed:", which the commands print themselves."""
    reason = (result.get("reason") or "unknown reason").strip()
    prefix = "verification failed:"
    if reason.lower().startswith(prefix):
        reason = reason[len(prefix):].strip()
    return reason


def exit_status(status, result):
    """exit_status maps the judge's status and verdict to this command's status."""
    if result is None or status != 0:
        return status if status != 0 else EXIT_INTERNAL
    return EXIT_OK if result.get("correct") else EXIT_FAILED
