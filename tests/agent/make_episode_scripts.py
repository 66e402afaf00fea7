"""Writes the scripted episodes of examples/relu_scale (replay scripts for `cuda-agent solve
--model replay:FILE`, docs/agent.md): the same story on the CPU and on CUDA. The agent writes its
kernel with a compile error, compiles, fixes it, verifies and gets a wrong result (the scale is
missing), fixes it, verifies again, profiles and finishes.

    python3 tests/agent/make_episode_scripts.py    # rewrites examples/relu_scale/episodes/{cpu,cuda}_scripted.jsonl

(It lives here, not beside the scripts: every .py file under examples/ is read as a task by the suites
that scan the folder.)
"""

import json
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "relu_scale"
HERE = EXAMPLE / "episodes"
CANDIDATES = EXAMPLE / "candidates"

CPU_BROKEN = """// y = max(x, 0) * scale, element-wise, on the CPU.
#include <cstdint>

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                    int config) {
  (void)config;
  (void)scale;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i]
    y[i] = v > 0.0f ? v : 0.0f;
  }
}
"""

# The CUDA story's kernel is candidates/cuda_correct's (float4 loads, faster than eager) with the two
# bugs the episode fixes: a missing semicolon and the scale left out.
CUDA_CORRECT = (CANDIDATES / "cuda_correct" / "kernels" / "relu_scale.cu").read_text()
CUDA_BROKEN = (CUDA_CORRECT.replace("    float4 v = x[i];\n", "    float4 v = x[i]\n")
               .replace("  return fmaxf(v, 0.0f) * scale;\n", "  return fmaxf(v, 0.0f);\n"))
assert CUDA_BROKEN.count("float4 v = x[i]\n") == 1 and "fmaxf(v, 0.0f);" in CUDA_BROKEN

# The fix of the compile error, then the fix of the wrong result, per device.
FIXES = {
    "cpu": {
        "kernel": "kernels/relu_scale.cpp",
        "broken": CPU_BROKEN,
        "syntax": ("    float v = x[i]\n", "    float v = x[i];\n"),
        "result": [("  (void)scale;\n", ""), ("    y[i] = v > 0.0f ? v : 0.0f;\n", "    y[i] = (v > 0.0f ? v : 0.0f) * scale;\n")],
    },
    "cuda": {
        "kernel": "kernels/relu_scale.cu",
        "broken": CUDA_BROKEN,
        "syntax": ("    float4 v = x[i]\n", "    float4 v = x[i];\n"),
        "result": [("  return fmaxf(v, 0.0f);\n", "  return fmaxf(v, 0.0f) * scale;\n")],
    },
}


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def turn(content, *calls):
    return {"content": content, "tool_calls": list(calls)}


def script(device):
    fix = FIXES[device]
    binding = (CANDIDATES / f"{device}_correct" / "kernels" / "relu_scale_binding.cpp").read_text()
    model_new = (CANDIDATES / f"{device}_correct" / "model_new.py").read_text()
    edits = [{"old_string": old, "new_string": new} for old, new in fix["result"]]
    return [
        turn("Let me plan and look at the reference.",
             call("TodoWrite", todos=[
                 {"content": "write the kernel, binding and model_new.py", "status": "in_progress"},
                 {"content": "compile and verify", "status": "pending"},
                 {"content": "profile", "status": "pending"}]),
             call("Read", file_path="model.py")),
        turn("A single element-wise kernel: relu then scale. Writing the three files.",
             call("Write", file_path=fix["kernel"], content=fix["broken"]),
             call("Write", file_path="kernels/relu_scale_binding.cpp", content=binding),
             call("Write", file_path="model_new.py", content=model_new)),
        turn("Compiling.", call("Bash", command="bash utils/compile.sh", timeout=600)),
        turn("A missing semicolon; fixing it.",
             call("Edit", file_path=fix["kernel"], old_string=fix["syntax"][0], new_string=fix["syntax"][1])),
        turn("Compiling again.", call("Bash", command="bash utils/compile.sh", timeout=600)),
        turn("It compiles; checking correctness.",
             call("Bash", command="python3 -m utils.verification", timeout=600)),
        turn("The outputs differ: I forgot the scale factor.",
             call("MultiEdit", file_path=fix["kernel"], edits=edits),
             call("Grep", pattern="scale", path="kernels", glob="*_binding.cpp")),
        turn("Verifying the fix.", call("Bash", command="python3 -m utils.verification", timeout=600)),
        turn("Correct. Profiling against eager and torch.compile.",
             call("Bash", command="python3 -m utils.profiling", timeout=600),
             call("Glob", pattern="kernels/*")),
        turn("The kernel is correct and profiled; kernels/ holds only the final files. Done."),
    ]


def main():
    for device in ("cpu", "cuda"):
        lines = [json.dumps(t) for t in script(device)]
        (HERE / f"{device}_scripted.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
