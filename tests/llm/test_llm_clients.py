"""The LLM clients end to end: `cuda-agent llm` against tests/fakes/fake_llm_server.py, for both
providers (OpenAI chat completions, Anthropic messages), streamed and not, with every fault the fake
can play: each is retried and the answer comes out exact, or the retries run out with a clear error.

The binary is <repo>/build/cuda-agent unless $CUDA_AGENT_BIN names another.
"""

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fakes"))
from fake_llm_server import FakeLlmServer  # noqa: E402

BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")

PROVIDERS = ["openai", "anthropic"]
MODES = ["stream", "no-stream"]

# Arguments with quotes, escapes and non-ASCII text: reassembling them from pieces must be exact.
ECHO_ARGUMENTS = {"text": "ping \"quoted\" back\\slash ünïcödé ✓ " + "x" * 40}
ECHO_TURN = {"content": "Calling the echo tool now, as asked.",
             "tool_calls": [{"name": "echo", "arguments": ECHO_ARGUMENTS}],
             "usage": {"prompt": 120, "completion": 17, "cached": 64}}


@pytest.fixture(autouse=True)
def need_binary():
    if not BIN.exists():
        pytest.skip(f"{BIN} is not built")


def llm_env(server, extra=None):
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
           and not k.startswith(("OPENAI_", "ANTHROPIC_", "CUDA_AGENT_"))}
    if server is not None:
        env["ANTHROPIC_BASE_URL"] = server.base_url
    env.update(extra or {})
    return env


def model_spec(server, provider):
    return f"openai:{server.base_url}/v1#fake-model" if provider == "openai" else "anthropic:fake-model"


def run_llm(server, provider, mode="stream", *flags, env=None, spec=None):
    """Runs `cuda-agent llm --json` with a small backoff; returns (process, parsed stdout)."""
    args = [str(BIN), "llm", "--model", spec or model_spec(server, provider), "--json",
            "--backoff", "0.01", "--backoff-max", "0.05", "--timeout", "20", *flags]
    if mode == "no-stream":
        args.append("--no-stream")
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60, env=env or llm_env(server))
    out = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc, out


def assert_echo_answer(out, mode, provider="openai"):
    """The answer of ECHO_TURN, exactly. Arguments sent as text (OpenAI; Anthropic's streamed
    input_json_delta pieces) come back byte for byte; an Anthropic non-streamed `input` object is
    serialised by the client."""
    assert out["ok"] is True, out
    assert out["content"] == ECHO_TURN["content"]
    assert len(out["tool_calls"]) == 1
    call = out["tool_calls"][0]
    assert call["name"] == "echo"
    if provider == "openai" or mode == "stream":
        assert call["arguments"] == json.dumps(ECHO_ARGUMENTS)  # byte for byte what the server sent
    assert json.loads(call["arguments"]) == ECHO_ARGUMENTS
    assert call["id"]
    assert out["stop_reason"] == "tool_use"
    assert out["usage"] == {"prompt_tokens": 120, "completion_tokens": 17, "cached_prompt_tokens": 64}
    assert (out["turns"][0]["streamed_pieces"] > 0) == (mode == "stream")


def model_requests(server):
    return [r for r in server.requests if not r["path"].startswith("/_")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_answer_with_tool_call(provider, mode):
    with FakeLlmServer(script=[ECHO_TURN]) as server:
        proc, out = run_llm(server, provider, mode)
        assert proc.returncode == 0, proc.stderr
        assert_echo_answer(out, mode, provider)
        assert out["attempts"] == 1
        assert out["provider"].startswith(f"{provider}:fake-model at http://127.0.0.1:")
        [request] = model_requests(server)
    body = request["body"]
    assert body["model"] == "fake-model"
    assert body.get("stream", False) == (mode == "stream")
    if provider == "openai":
        assert request["path"] == "/v1/chat/completions"
        assert body["tools"][0]["type"] == "function"
        assert body["tools"][0]["function"]["name"] == "echo"
        assert body["tools"][0]["function"]["parameters"]["required"] == ["text"]
        assert body["messages"][0]["role"] == "system"
        assert body["messages"][1]["role"] == "user"
        if mode == "stream":
            assert body["stream_options"] == {"include_usage": True}
    else:
        assert request["path"] == "/v1/messages"
        assert request["headers"]["anthropic-version"] == "2023-06-01"
        assert "x-api-key" not in request["headers"]  # loopback: no key needed
        assert body["tools"][0]["name"] == "echo"
        assert body["tools"][0]["input_schema"]["required"] == ["text"]
        assert body["system"].startswith("You are")
        assert body["messages"] == [{"role": "user", "content": body["messages"][0]["content"]}]
        assert body["max_tokens"] == 1024


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_results_go_back_in_the_provider_format(provider, mode):
    # Turn 1: two calls, the second with invalid JSON arguments (passed through, answered as an
    # error observation); turn 2: a plain answer.
    bad_arguments = '{"text": "unterminated'
    turn1 = {"content": "Two calls.", "tool_calls": [{"name": "echo", "arguments": {"text": "one"}},
                                                     {"name": "echo", "arguments": bad_arguments}]}
    turn2 = {"content": "Both calls answered."}
    with FakeLlmServer(script=[turn1, turn2]) as server:
        proc, out = run_llm(server, provider, mode, "--turns", "3")
        assert proc.returncode == 0, proc.stderr
        requests = model_requests(server)
    assert len(out["turns"]) == 2
    first, second = out["turns"]
    if provider == "anthropic" and mode == "no-stream":
        # A whole Anthropic answer carries `input` objects (never invalid JSON); the client serialises.
        assert json.loads(first["tool_calls"][0]["arguments"]) == {"text": "one"}
    else:
        assert [c["arguments"] for c in first["tool_calls"]] == ['{"text": "one"}', bad_arguments]
    assert second["content"] == "Both calls answered." and second["stop_reason"] == "end_turn"
    assert out["attempts"] == 2
    assert len(requests) == 2
    ids = [c["id"] for c in first["tool_calls"]]
    messages = requests[1]["body"]["messages"]
    if provider == "openai":
        assistant, result_ok, result_bad = messages[-3:]
        assert assistant["role"] == "assistant" and assistant["content"] == "Two calls."
        assert [c["id"] for c in assistant["tool_calls"]] == ids
        assert assistant["tool_calls"][1]["function"] == {"name": "echo", "arguments": bad_arguments}
        assert result_ok == {"role": "tool", "tool_call_id": ids[0], "content": "one"}
        assert result_bad["role"] == "tool" and result_bad["tool_call_id"] == ids[1]
        assert result_bad["content"].startswith("error:")
    else:
        assistant, results = messages[-2:]
        assert assistant["role"] == "assistant"
        assert assistant["content"][0] == {"type": "text", "text": "Two calls."}
        assert assistant["content"][1] == {"type": "tool_use", "id": ids[0], "name": "echo", "input": {"text": "one"}}
        if mode == "stream":
            assert assistant["content"][2]["input"] == {"invalid_arguments": bad_arguments}
        # Consecutive results share one user message; the failed one says is_error.
        assert results["role"] == "user"
        assert results["content"][0] == {"type": "tool_result", "tool_use_id": ids[0], "content": "one"}
        assert results["content"][1]["tool_use_id"] == ids[1]
        assert results["content"][1]["is_error"] is True
        assert len(results["content"]) == 2


# Each fault, once, then a good answer: (fault, attempts expected). `split` is no failure at all.
FAULTS = [
    ({"kind": "status", "code": 429, "retry_after": 0}, 2),
    ("status:500", 2),
    ("status:503", 2),
    ("status:408", 2),
    ("malformed", 2),
    ("disconnect", 2),
    ("overloaded", 2),
    ({"kind": "split", "sizes": [1, 3, 7]}, 1),
    ({"kind": "slow", "delay": 0.2, "between": 0.005}, 1),
]


@pytest.mark.parametrize("fault,attempts", FAULTS, ids=lambda f: json.dumps(f) if not isinstance(f, int) else str(f))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_fault_is_retried_and_the_answer_is_exact(provider, mode, fault, attempts):
    with FakeLlmServer(script=[ECHO_TURN], faults=[fault]) as server:
        proc, out = run_llm(server, provider, mode)
        assert proc.returncode == 0, proc.stderr
        assert_echo_answer(out, mode, provider)
        assert out["attempts"] == attempts
        assert len(model_requests(server)) == attempts


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_whole_json_answer_to_a_streamed_request_is_read(provider):
    with FakeLlmServer(script=[ECHO_TURN], faults=["ignore_stream"]) as server:
        proc, out = run_llm(server, provider, "stream")
        assert proc.returncode == 0, proc.stderr
        assert_echo_answer(out, "no-stream", provider)
        assert out["attempts"] == 1
        assert model_requests(server)[0]["body"]["stream"] is True


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_stall_past_the_stall_timeout_is_retried(provider, mode):
    with FakeLlmServer(script=[ECHO_TURN], faults=[{"kind": "slow", "delay": 1.5}]) as server:
        proc, out = run_llm(server, provider, mode, "--stall-timeout", "0.2")
        assert proc.returncode == 0, proc.stderr
        assert_echo_answer(out, mode, provider)
        assert out["attempts"] == 2
        assert out["seconds"] < 1.5  # the first attempt was given up, not waited out


def test_retry_after_is_honoured():
    with FakeLlmServer(script=[ECHO_TURN], faults=[{"kind": "status", "code": 429, "retry_after": 1}]) as server:
        proc, out = run_llm(server, "openai", "stream", "--backoff-max", "5")
        assert proc.returncode == 0, proc.stderr
        assert out["attempts"] == 2
        assert out["seconds"] >= 0.95


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_faults_beyond_max_attempts_end_with_a_clear_error(provider, mode):
    with FakeLlmServer(script=[ECHO_TURN], faults=["status:503"] * 3) as server:
        proc, out = run_llm(server, provider, mode, "--max-attempts", "3")
        assert len(model_requests(server)) == 3
    assert proc.returncode == 4, proc.stderr
    assert out["ok"] is False and out["code"] == "internal"
    assert "gave up after 3 attempts" in out["error"]
    assert "HTTP 503" in out["error"] and "fake error 503" in out["error"]
    assert "gave up after 3 attempts" in proc.stderr


def test_broken_streams_beyond_max_attempts():
    with FakeLlmServer(script=[ECHO_TURN], faults=["disconnect", "disconnect"]) as server:
        proc, out = run_llm(server, "anthropic", "stream", "--max-attempts", "2")
    assert proc.returncode == 4
    assert "gave up after 2 attempts" in out["error"] and "stream ended before its final event" in out["error"]


def test_stalls_beyond_max_attempts_are_a_deadline():
    slow = {"kind": "slow", "delay": 1.0}
    with FakeLlmServer(script=[ECHO_TURN], faults=[slow, slow]) as server:
        proc, out = run_llm(server, "openai", "stream", "--max-attempts", "2", "--stall-timeout", "0.2")
    assert proc.returncode == 4
    assert out["code"] == "deadline_exceeded" and "stall timeout" in out["error"]


@pytest.mark.parametrize("code", [400, 401, 403, 404])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_client_errors_are_not_retried(provider, code):
    fault = {"kind": "status", "code": code, "message": "invalid x-api-key"}
    with FakeLlmServer(script=[ECHO_TURN], faults=[fault]) as server:
        proc, out = run_llm(server, provider, "stream", "--max-attempts", "5")
        assert len(model_requests(server)) == 1
    assert proc.returncode == 2
    assert out["code"] == "invalid_argument"
    assert f"HTTP {code}" in out["error"] and "invalid x-api-key" in out["error"]


def test_keys_are_sent_from_the_environment():
    with FakeLlmServer(script=[ECHO_TURN, ECHO_TURN]) as server:
        env = llm_env(server, {"OPENAI_API_KEY": "sk-openai-test", "ANTHROPIC_API_KEY": "sk-ant-test"})
        assert run_llm(server, "openai", env=env)[0].returncode == 0
        assert run_llm(server, "anthropic", env=env)[0].returncode == 0
        openai, anthropic = model_requests(server)
    assert openai["headers"]["authorization"] == "Bearer sk-openai-test"
    assert anthropic["headers"]["x-api-key"] == "sk-ant-test"


def test_anthropic_needs_a_key_for_a_remote_base():
    env = llm_env(None, {"ANTHROPIC_BASE_URL": "https://api.anthropic.com"})
    proc, out = run_llm(None, "anthropic", spec="anthropic:claude-x", env=env)
    assert proc.returncode == 4
    assert out["code"] == "failed_precondition" and "ANTHROPIC_API_KEY" in out["error"]


def test_bad_spec_is_a_usage_error():
    proc, out = run_llm(None, "openai", spec="openai:127.0.0.1:8000#m", env=llm_env(None))
    assert proc.returncode == 2
    assert "openai:http://127.0.0.1:8000/v1#" in out["error"]


def test_connection_refused_is_retried_then_reported():
    with FakeLlmServer() as server:
        spec = f"openai:{server.base_url}/v1#m"
    proc, out = run_llm(None, "openai", spec=spec, env=llm_env(None))
    assert proc.returncode == 4
    assert "cannot connect" in out["error"] and "gave up after 6 attempts" in out["error"]


def test_missing_libcurl_is_a_clear_error():
    with FakeLlmServer(script=[ECHO_TURN]) as server:
        env = llm_env(server, {"CUDA_AGENT_LIBCURL": "/nonexistent/libcurl.so.4"})
        proc, out = run_llm(server, "openai", env=env)
        assert model_requests(server) == []
    assert proc.returncode == 4
    assert out["code"] == "failed_precondition"
    assert "cannot load /nonexistent/libcurl.so.4" in out["error"] and "libcurl4" in out["error"]


def test_text_output_names_everything():
    with FakeLlmServer(script=[ECHO_TURN]) as server:
        proc = subprocess.run([str(BIN), "llm", "--model", model_spec(server, "openai")], capture_output=True,
                              text=True, timeout=30, env=llm_env(server))
    assert proc.returncode == 0, proc.stderr
    for needle in ["provider:", "answer:      Calling the echo tool now", "tool call:   echo {\"text\"",
                   "stop reason: tool_use", "tokens:      prompt 120, completion 17, cached 64", "attempts:    1",
                   "seconds:"]:
        assert needle in proc.stdout, proc.stdout


def test_fake_server_as_a_program(tmp_path):
    """The way other tests (solve) use the fake: a process with script and fault files."""
    (tmp_path / "script.json").write_text(json.dumps([ECHO_TURN]))
    (tmp_path / "faults.json").write_text(json.dumps(["status:500"]))
    fake = subprocess.Popen([sys.executable, str(REPO / "tests" / "fakes" / "fake_llm_server.py"),
                             "--script", str(tmp_path / "script.json"), "--faults", str(tmp_path / "faults.json"),
                             "--requests-log", str(tmp_path / "requests.jsonl")], stdout=subprocess.PIPE, text=True)
    try:
        port = int(fake.stdout.readline())
        env = llm_env(None)
        proc, out = run_llm(None, "openai", spec=f"openai:http://127.0.0.1:{port}/v1#m", env=env)
        assert proc.returncode == 0, proc.stderr
        assert_echo_answer(out, "stream")
        assert out["attempts"] == 2
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_requests") as response:
            recorded = json.load(response)
        assert len(recorded) == 2 and recorded[0]["body"]["model"] == "m"
        assert len((tmp_path / "requests.jsonl").read_text().splitlines()) == 2
        # Faults can also be queued while it runs.
        queue = urllib.request.Request(f"http://127.0.0.1:{port}/_faults", data=b'["status:401"]', method="POST")
        urllib.request.urlopen(queue).close()
        proc, out = run_llm(None, "openai", spec=f"openai:http://127.0.0.1:{port}/v1#m", env=env)
        assert proc.returncode == 2 and "HTTP 401" in out["error"]
    finally:
        fake.terminate()
        fake.wait(timeout=10)


def test_flags_have_environment_mirrors():
    with FakeLlmServer(script=[ECHO_TURN], faults=["status:500"] * 3) as server:
        env = llm_env(server, {"CUDA_AGENT_MAX_ATTEMPTS": "2", "CUDA_AGENT_NO_STREAM": "1"})
        proc, out = run_llm(server, "openai", "stream", env=env)
        requests = model_requests(server)
    assert proc.returncode == 4 and "gave up after 2 attempts" in out["error"]
    assert len(requests) == 2 and "stream" not in requests[0]["body"]
