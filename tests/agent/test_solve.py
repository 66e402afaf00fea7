"""`cuda-agent solve` end to end on the CPU: the scripted relu_scale episode (a compile error fixed,
a wrong result fixed, profiled, judged), malformed tool calls answered with error observations,
clean ends (script exhausted, LLM errors, turn limit, context budget), and one episode against the
fake OpenAI-compatible server, with a disconnect that exhausts the retries.

The binary is <repo>/build/cuda-agent unless $CUDA_AGENT_BIN names another.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")
TASK = REPO / "examples" / "relu_scale" / "model.py"
CPU_SCRIPT = REPO / "examples" / "relu_scale" / "episodes" / "cpu_scripted.jsonl"
FAKES = REPO / "tests" / "fakes"


@pytest.fixture(autouse=True)
def need_binary():
    if not BIN.exists():
        pytest.skip(f"{BIN} is not built")


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CUDA_AGENT_", "OPENAI_", "ANTHROPIC_"))
           and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    if os.environ.get("CUDA_AGENT_CACHE_DIR"):
        env["CUDA_AGENT_CACHE_DIR"] = os.environ["CUDA_AGENT_CACHE_DIR"]
    env.update(extra or {})
    return env


def solve(out, model, *flags, timeout=900):
    argv = [str(BIN), "solve", str(TASK), "--model", model, "--device", "cpu", "--out", str(out), *flags]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=clean_env())


def write_script(path, turns):
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


def records(out):
    lines = (out / "trajectory.jsonl").read_text().splitlines()
    parsed = [json.loads(line) for line in lines]
    assert all(r["version"] == 1 for r in parsed)
    return parsed


def observations(out):
    return [r for r in records(out) if r["type"] == "observation"]


def result(out):
    data = json.loads((out / "result.json").read_text())
    assert data["version"] == 1
    return data


def test_scripted_cpu_episode(tmp_path):
    out = tmp_path / "episode"
    proc = solve(out, f"replay:{CPU_SCRIPT}", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary == result(out)
    assert summary["stop_reason"] == "model_finished"
    assert summary["turns"] == 10
    assert summary["tool_calls"] == 14
    assert summary["reward"] >= 1, summary["judge"]
    assert summary["judge"]["correct"] is True
    assert summary["best_in_loop"]["until"] == "profile"
    assert summary["best_in_loop"]["reward"] >= 1

    recs = records(out)
    assert recs[0]["type"] == "episode"
    assert "SKILL.md" in recs[0]["system"] or "Writing a faster extension" in recs[0]["system"]
    assert "torch.relu(x) * self.scale" in recs[0]["task_message"]
    assert [t["name"] for t in recs[0]["tools"]] == ["Bash", "BashOutput", "KillBash", "Read", "Write", "Edit",
                                                     "MultiEdit", "Glob", "Grep", "TodoWrite"]
    assistants = [r for r in recs if r["type"] == "assistant"]
    assert [a["turn"] for a in assistants] == list(range(1, 11))
    calls = [c for a in assistants for c in a["tool_calls"]]
    obs = observations(out)
    # Every call has its observation, in order, with the call's id.
    assert [o["tool_call_id"] for o in obs] == [c["id"] for c in calls]
    assert len([r for r in recs if r["type"] == "turn"]) == 10
    assert recs[-2]["type"] == "stop" and recs[-2]["reason"] == "model_finished"
    assert recs[-1]["type"] == "final_judgement" and recs[-1]["result"]["reward"] == summary["reward"]

    bash = [(o["text"], o["is_error"]) for o in obs if o["tool"] == "Bash"]
    assert len(bash) == 5
    compile_error, compile_ok, verify_fail, verify_ok, profile = bash
    assert compile_error[1] and "Compile failed" in compile_error[0]
    assert "kernels/relu_scale.cpp:10" in compile_error[0]
    assert not compile_ok[1] and "Compile success: cuda_extension.so" in compile_ok[0]
    assert verify_fail[1] and "[FAIL] check 1/" in verify_fail[0] and "verify failed" in verify_fail[0]
    assert not verify_ok[1]
    assert "verification passed" in verify_ok[0] or "[PASS] verify success" in verify_ok[0]
    assert not profile[1] and "Torch Baseline:" in profile[0] and "Reward:" in profile[0]
    glob = [o["text"] for o in obs if o["tool"] == "Glob"]
    assert glob == ["kernels/relu_scale.cpp\nkernels/relu_scale_binding.cpp\n"]
    # The final workspace holds the fixed kernel; the protected files are intact.
    kernel = (out / "workspace" / "kernels" / "relu_scale.cpp").read_text()
    assert "(v > 0.0f ? v : 0.0f) * scale;" in kernel
    assert (out / "workspace" / "model.py").read_text() == TASK.read_text()
    # Progress lines on stderr, one per turn, and the summary.
    assert "turn 3/200  Bash: bash utils/compile.sh  [1 error]" in proc.stderr
    assert "episode done: 10 turns" in proc.stderr


def test_bad_tool_calls_become_error_observations(tmp_path):
    script = write_script(tmp_path / "bad.jsonl", [
        {"tool_calls": [{"name": "Delete", "arguments": {"file_path": "model.py"}}]},
        {"tool_calls": [{"name": "Write", "arguments": "{\"file_path\": \"kernels/a.cpp\", \"content\": "}]},
        {"tool_calls": [{"name": "Edit", "arguments": {"file_path": "model.py", "old_string": "torch.relu",
                                                        "new_string": "torch.tanh"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 1000", "timeout": 2}}]},
        {"tool_calls": [{"name": "Read", "arguments": {"path": "model.py"}}]},
        {"tool_calls": [{"name": "Write", "arguments": {"file_path": "../escape.txt", "content": "x"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo still here; ls kernels 2>&1 | head -1"}}]},
        {"content": "giving up"},
    ])
    out = tmp_path / "episode"
    proc = solve(out, f"replay:{script}")
    assert proc.returncode == 0, proc.stderr
    obs = observations(out)
    assert [o["is_error"] for o in obs] == [True] * 6 + [False]
    texts = [o["text"] for o in obs]
    assert "unknown tool 'Delete'" in texts[0]
    assert "not valid JSON" in texts[1]
    assert "protected workspace file" in texts[2]
    assert "timed out after 2 s" in texts[3]
    assert "missing required argument 'file_path'" in texts[4]
    assert "outside the workspace" in texts[5]
    assert "still here" in texts[6]
    assert not (tmp_path / "escape.txt").exists()
    assert (out / "workspace" / "model.py").read_text() == TASK.read_text()
    summary = result(out)
    assert summary["stop_reason"] == "model_finished"
    assert summary["tool_errors"] == 6
    assert summary["reward"] == -1


def test_script_exhausted_ends_cleanly(tmp_path):
    script = write_script(tmp_path / "short.jsonl", [
        {"tool_calls": [{"name": "Write", "arguments": {"file_path": "model_new.py", "content": "x = 1\n"}}]},
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "model_new.py"}}]},
    ])
    out = tmp_path / "episode"
    proc = solve(out, f"replay:{script}")
    assert proc.returncode == 0, proc.stderr
    summary = result(out)
    assert summary["stop_reason"] == "llm_error: replay script exhausted after 2 turns"
    assert summary["turns"] == 2
    assert summary["judge"] is not None and summary["reward"] == -1
    recs = records(out)
    assert [r["type"] for r in recs if r["type"] in ("llm_error", "stop", "final_judgement")] == \
        ["llm_error", "stop", "final_judgement"]
    assert "     1\tx = 1" in observations(out)[1]["text"]


def test_llm_error_on_first_turn_is_unreachable(tmp_path):
    script = write_script(tmp_path / "err.jsonl", [{"error": "HTTP 503 after 6 attempts: overloaded"}])
    out = tmp_path / "episode"
    proc = solve(out, f"replay:{script}")
    assert proc.returncode == 5, proc.stderr
    summary = result(out)
    assert summary["stop_reason"] == "llm_error: HTTP 503 after 6 attempts: overloaded"
    assert summary["turns"] == 0
    assert (out / "trajectory.jsonl").exists()


def test_bad_model_spec_is_a_usage_error(tmp_path):
    out = tmp_path / "episode"
    proc = solve(out, "bogus:thing")
    assert proc.returncode == 2, proc.stderr
    assert result(out)["stop_reason"].startswith("llm_error: bad model spec")
    proc = subprocess.run([str(BIN), "solve", str(TASK)], capture_output=True, text=True, env=clean_env())
    assert proc.returncode == 2 and "--model is required" in proc.stderr
    proc = subprocess.run([str(BIN), "solve", str(tmp_path / "none.py"), "--model", "replay:x"],
                          capture_output=True, text=True, env=clean_env())
    assert proc.returncode == 3


def test_turn_limit_and_context_budget(tmp_path):
    looping = write_script(tmp_path / "loop.jsonl",
                           [{"tool_calls": [{"name": "Glob", "arguments": {"pattern": "*"}}]}] * 5)
    out = tmp_path / "turns"
    proc = solve(out, f"replay:{looping}", "--max-turns", "3")
    assert proc.returncode == 0, proc.stderr
    assert result(out)["stop_reason"] == "max_turns"
    assert result(out)["turns"] == 3
    # SKILL.md alone is ~3k tokens: a 1k budget cannot hold the first request.
    out = tmp_path / "budget"
    proc = solve(out, f"replay:{looping}", "--context-tokens", "2000", "--max-output-tokens", "1000")
    assert proc.returncode == 5 or proc.returncode == 0, proc.stderr
    assert result(out)["stop_reason"] == "context_budget"
    # One --out folder holds one episode.
    proc = solve(out, f"replay:{looping}")
    assert proc.returncode == 2 and "exists already" in proc.stderr


def test_context_shrinks_old_observations(tmp_path):
    # Each Read of SKILL.md shows ~14k chars (~3.5k tokens); with a 20k budget the oldest are elided and
    # the run goes on (the last 6 messages, 3 of them reads, are never elided).
    reads = [{"tool_calls": [{"name": "Read", "arguments": {"file_path": "SKILL.md"}}]}] * 6 + [{"content": "done"}]
    script = write_script(tmp_path / "reads.jsonl", reads)
    out = tmp_path / "episode"
    proc = solve(out, f"replay:{script}", "--context-tokens", "20000", "--max-output-tokens", "1000")
    assert proc.returncode == 0, proc.stderr
    summary = result(out)
    assert summary["stop_reason"] == "model_finished", summary
    assert summary["elided_observations"] >= 1
    elided = [r for r in records(out) if r["type"] == "context_elided"]
    assert elided and elided[0]["messages"][0] == 2  # the first observation goes first


@pytest.mark.skipif(not (FAKES / "fake_llm_server.py").exists(), reason="no fake LLM server")
def test_solve_against_fake_openai_server_with_disconnects(tmp_path):
    sys.path.insert(0, str(FAKES))
    from fake_llm_server import FakeLlmServer
    turns = [{"content": "Looking around.",
              "tool_calls": [{"name": "Bash", "arguments": {"command": "echo hello from the sandbox"}}],
              "usage": {"prompt": 3000, "completion": 20}},
             {"content": "Next.", "tool_calls": [{"name": "Glob", "arguments": {"pattern": "*.py"}}]}]
    with FakeLlmServer(script=turns, faults=["ok", "disconnect", "disconnect", "disconnect"]) as server:
        out = tmp_path / "episode"
        argv = [str(BIN), "solve", str(TASK), "--model", f"openai:{server.base_url}/v1#fake-model",
                "--device", "cpu", "--out", str(out), "--llm-max-attempts", "2", "--llm-backoff", "0.05",
                "--llm-backoff-max", "0.1"]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=clean_env())
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    summary = result(out)
    assert summary["turns"] == 1
    assert summary["stop_reason"].startswith("llm_error: "), summary["stop_reason"]
    assert summary["tokens_in"] == 3000 and summary["tokens_out"] == 20
    assert observations(out)[0]["text"] == "hello from the sandbox\n"
    assert len(requests) == 3  # one answered, two attempts cut off
    body = requests[1]["body"]
    assert body["model"] == "fake-model"
    assert body["messages"][0]["role"] == "system" and "SKILL" not in body["messages"][0]["content"][:0]
    tool_messages = [m for m in body["messages"] if m["role"] == "tool"]
    assert tool_messages and "hello from the sandbox" in json.dumps(tool_messages[0]["content"])
    assert {t["function"]["name"] for t in body["tools"]} >= {"Bash", "Read", "Edit", "MultiEdit"}
    assert summary["judge"] is not None


def test_unreachable_server_exits_5(tmp_path):
    # Nothing listens on port 9 of the loopback: the first request fails after its attempts.
    out = tmp_path / "episode"
    proc = solve(out, "openai:http://127.0.0.1:9/v1#nobody", "--llm-max-attempts", "2", "--llm-backoff", "0.05",
                 "--llm-connect-timeout", "2", timeout=300)
    assert proc.returncode == 5, proc.stderr
    summary = result(out)
    assert summary["stop_reason"].startswith("llm_error: "), summary
    assert summary["turns"] == 0
    assert summary["judge"] is not None  # the (empty) workspace was still judged


def test_background_jobs_in_an_episode(tmp_path):
    script = write_script(tmp_path / "bg.jsonl", [
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo tick; sleep 1000", "run_in_background": True}},
                        {"name": "Bash", "arguments": {"command": "sleep 1; echo second; sleep 1000",
                                                       "run_in_background": True}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 2"}}]},
        {"tool_calls": [{"name": "BashOutput", "arguments": {"id": "bash_1"}},
                        {"name": "KillBash", "arguments": {"id": "bash_1"}},
                        {"name": "BashOutput", "arguments": {"id": "bash_1"}}]},
        {"content": "leaving bash_2 running"},
    ])
    out = tmp_path / "episode"
    proc = solve(out, f"replay:{script}", timeout=300)
    assert proc.returncode == 0, proc.stderr
    texts = [o["text"] for o in observations(out)]
    assert texts[0].startswith("Started background job bash_1")
    assert texts[1].startswith("Started background job bash_2")
    assert texts[3].startswith("[bash_1: running") and "tick\n" in texts[3]
    assert texts[4] == "[bash_1: killed]"
    assert texts[5].startswith("[bash_1: killed]")
    assert result(out)["stop_reason"] == "model_finished"
    assert "second" in (out / "jobs" / "bash_2.log").read_text()
    # bash_2 was stopped when the episode ended: no sleep of the episode survives it.
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "echo second; sleep 1000" not in ps


def test_bench_with_the_agent_solver(tmp_path):
    # `bench --solver agent:SPEC` runs solve per task (episode folder per task) and judges its workspace.
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "relu_scale.py").write_text(TASK.read_text())
    out = tmp_path / "bench"
    argv = [str(BIN), "bench", str(suite), "--solver", f"agent:replay:{CPU_SCRIPT}", "--device", "cpu",
            "--store", str(tmp_path / "bench.sqlite"), "--out", str(out), "--baselines", "eager",
            "--baseline-drift", "100", "--baseline-max-age", "0"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["correct"] == 1, report["counts"]
    episode = out / "workspaces" / "relu_scale"
    assert result(episode)["stop_reason"] == "model_finished"
    assert (episode / "workspace" / "kernels" / "relu_scale.cpp").exists()
    assert Path(str(episode) + ".solved").exists()
