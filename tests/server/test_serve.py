"""`cuda-agent serve` over real sockets on the CPU device: a scripted episode played over HTTP matches
`solve` with the same script; kill -9 and a restart keep every finished call and grade; back-pressure
(429), auth (401), every bad input with its status code; idempotent call ids; TTL expiry; SIGTERM.

Each test starts the real binary on a free loopback port (--port 0) and reads the URL it prints.
The binary is <repo>/build/cuda-agent unless $CUDA_AGENT_BIN names another.
"""

import base64
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")
TASK = REPO / "examples" / "relu_scale" / "model.py"
CANDIDATES = REPO / "examples" / "relu_scale" / "candidates"
CPU_SCRIPT = REPO / "examples" / "relu_scale" / "episodes" / "cpu_scripted.jsonl"


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


class Server:
    """One `cuda-agent serve` process and a small client for it."""

    def __init__(self, state_dir, *flags, token=None, env=None):
        self.state_dir = Path(state_dir)
        self.token = token
        argv = [str(BIN), "serve", "--port", "0", "--device", "cpu", "--state-dir", str(state_dir),
                "--shutdown-grace", "30", *flags]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=clean_env(env))
        line = self.proc.stdout.readline()
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.proc.kill()
            raise AssertionError(f"no URL line: {line!r}; stderr: {self.proc.stderr.read()}")
        self.port = int(match.group(1))

    def request(self, method, path, body=None, raw=None, token="default", headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        sent = dict(headers or {})
        token = self.token if token == "default" else token
        if token:
            sent["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        if data is not None:
            sent["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=sent)
        resp = conn.getresponse()
        text = resp.read().decode()
        conn.close()
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
        return resp.status, dict(resp.getheaders()), parsed

    def ok(self, method, path, body=None, status=200):
        code, _, answer = self.request(method, path, body)
        assert code == status, (code, answer)
        return answer

    def open(self, **fields):
        return self.ok("POST", "/v1/sessions", {"task": str(TASK), **fields}, status=201)

    def call(self, sid, call_id, tool, arguments):
        return self.ok("POST", f"/v1/sessions/{sid}/calls",
                       {"call_id": call_id, "tool": tool, "arguments": arguments})

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture
def servers():
    started = []

    def start(state_dir, *flags, **kwargs):
        s = Server(state_dir, *flags, **kwargs)
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def error_of(answer):
    assert set(answer) == {"error"}, answer
    assert set(answer["error"]) == {"code", "message"}
    return answer["error"]


def normalized(text, workspace):
    """An observation without what differs between two runs: the workspace's path, numbers (timings,
    counts over fresh random inputs)."""
    return re.sub(r"\d+(\.\d+)?", "N", text.replace(str(workspace), "<ws>"))


def short_script(path):
    """A short episode: look around, write the correct CPU candidate, one malformed call, stop."""
    files = [{"name": "Write", "arguments": {"file_path": str(f.relative_to(CANDIDATES / "cpu_correct")),
                                              "content": f.read_text()}}
             for f in sorted((CANDIDATES / "cpu_correct").rglob("*")) if f.is_file()]
    turns = [
        {"content": "plan", "tool_calls": [
            {"name": "TodoWrite", "arguments": {"todos": [{"content": "write", "status": "in_progress"}]}},
            {"name": "Read", "arguments": {"file_path": "model.py"}}]},
        {"content": "write", "tool_calls": files},
        {"content": "check", "tool_calls": [
            {"name": "Glob", "arguments": {"pattern": "kernels/*"}},
            {"name": "Grep", "arguments": {"pattern": "scale", "path": "kernels"}},
            {"name": "Edit", "arguments": "{\"file_path\": \"model.py\""},
            {"name": "Bash", "arguments": {"command": "ls; cat kernels/relu_scale.cpp | wc -l"}}]},
        {"content": "done"},
    ]
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


@pytest.mark.parametrize("script", [
    "short",
    pytest.param("cpu_scripted", marks=pytest.mark.skipif(
        os.environ.get("CUDA_AGENT_SLOW_TESTS") != "1",
        reason="slow (four builds and two judgements on the CPU); set CUDA_AGENT_SLOW_TESTS=1")),
])
def test_scripted_episode_over_http_matches_solve(tmp_path, servers, script):
    """The same scripted model through `solve` and through HTTP: same tools, prompts, observations and
    reward. "cpu_scripted" is solve's own scripted episode (a compile error fixed, a wrong result
    fixed, profiled); "short" writes a correct candidate at once."""
    script_path = CPU_SCRIPT if script == "cpu_scripted" else short_script(tmp_path / "short.jsonl")
    out = tmp_path / "solve"
    # Without baselines the reward of a correct candidate is 1 whatever the timings: on a shared CPU a
    # candidate as fast as eager flips between 1 and 2 from one judgement to the next.
    judge_flags = ["--baselines", "none", "--checks", "2", "--warmup", "1", "--iters", "3"]
    proc = subprocess.run([str(BIN), "solve", str(TASK), "--model", f"replay:{script_path}", "--device", "cpu",
                           "--out", str(out), "--json", *judge_flags], capture_output=True, text=True,
                          timeout=900, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    solved = json.loads(proc.stdout)
    assert solved["stop_reason"] == "model_finished"
    records = [json.loads(line) for line in (out / "trajectory.jsonl").read_text().splitlines()]
    solve_obs = [r for r in records if r["type"] == "observation"]
    solve_ws = solved["workspace"]

    server = servers(tmp_path / "state", *judge_flags)
    opened = server.open()
    assert opened["tools"] == records[0]["tools"]
    assert opened["system_prompt"] == records[0]["system"]
    sid = opened["session_id"]
    http_ws = (server.state_dir / "sessions" / sid / "workspace").resolve()
    assert normalized(opened["task_message"], http_ws) == normalized(records[0]["task_message"], solve_ws)
    turns = [json.loads(line) for line in script_path.read_text().splitlines()]
    calls = [c for t in turns for c in t.get("tool_calls", [])]
    assert len(calls) == len(solve_obs) == solved["tool_calls"]
    for i, (c, expected) in enumerate(zip(calls, solve_obs)):
        arguments = c["arguments"]  # as the model emitted them: an object, or text
        answer = server.call(sid, f"c{i}", c["name"], arguments)
        assert answer["calls_used"] == i + 1 and answer["replayed"] is False
        got = answer["observation"]
        assert got["is_error"] == expected["is_error"], (c, got, expected)
        assert normalized(got["text"], http_ws) == normalized(expected["text"], solve_ws), c
    grade = server.ok("POST", f"/v1/sessions/{sid}/grade", {})
    assert grade["result"]["correct"] is True, grade["result"]["reason"]
    assert grade["reward"] == solved["reward"] == 1, (grade["reward"], solved["reward"])
    status = server.ok("GET", f"/v1/sessions/{sid}")
    assert status["status"] == "graded" and status["calls"] == len(calls)
    assert status["grade"]["reward"] == grade["reward"]
    assert server.stop() == 0


def test_kill9_and_restart_keep_finished_calls_and_grades(tmp_path, servers):
    state = tmp_path / "state"
    server = servers(state)
    graded = server.open()["session_id"]
    first = server.call(graded, "todo", "TodoWrite", {"todos": [{"content": "x", "status": "pending"}]})
    # An empty workspace grades quickly: no model_new.py is a verdict of -1.
    grade = server.ok("POST", f"/v1/sessions/{graded}/grade", {})
    assert grade["reward"] == -1
    live = server.open()["session_id"]
    read = server.call(live, "r1", "Read", {"file_path": "model.py"})
    write = server.call(live, "w1", "Write", {"file_path": "kernels/note.cpp", "content": "// kept\n"})
    assert not read["observation"]["is_error"] and not write["observation"]["is_error"]
    server.proc.kill()
    server.proc.wait()

    again = servers(state)
    replay = again.call(graded, "todo", "TodoWrite", {})
    assert replay["replayed"] is True and replay["observation"] == first["observation"]
    assert again.ok("POST", f"/v1/sessions/{graded}/grade", {}) == grade
    for call_id, before in (("r1", read), ("w1", write)):
        after = again.call(live, call_id, "Read", {"file_path": "ignored"})
        assert after["replayed"] is True
        assert after["observation"] == before["observation"] and after["calls_used"] == before["calls_used"]
    # The open session was reopened from its folder: its workspace and call count carry on.
    status = again.ok("GET", f"/v1/sessions/{live}")
    assert status["status"] == "open" and status["calls"] == 2
    more = again.call(live, "r2", "Read", {"file_path": "kernels/note.cpp"})
    assert "// kept" in more["observation"]["text"] and more["calls_used"] == 3
    # A session whose folder vanished while the server was down is reported interrupted.
    lost = again.open()["session_id"]
    again.proc.kill()
    again.proc.wait()
    subprocess.run(["rm", "-rf", str(state / "sessions" / lost)], check=True)
    third = servers(state)
    assert third.ok("GET", f"/v1/sessions/{lost}")["status"] == "interrupted"
    code, _, answer = third.request("POST", f"/v1/sessions/{lost}/calls",
                                    {"call_id": "x", "tool": "Read", "arguments": {}})
    assert code == 409 and error_of(answer)["code"] == "session_interrupted"


def candidate_files(name):
    folder = CANDIDATES / name
    return {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}


def test_jobs_and_a_full_queue_answering_429_with_retry_after(tmp_path, servers):
    server = servers(tmp_path / "state", "--queue-per-device", "0", "--judge-workers", "1")
    # A job that fails before any build finishes quickly: queued → running → done.
    quick = server.ok("POST", "/v1/evaluate", {"task": str(TASK), "files": candidate_files("cpu_missing_model_new"),
                                               "wait": False}, status=202)["job_id"]
    deadline = time.time() + 60
    while (state := server.ok("GET", f"/v1/jobs/{quick}"))["status"] != "done":
        assert state["status"] in ("queued", "running") and time.time() < deadline
        time.sleep(0.2)
    assert state["reward"] == -1 and state["result"]["correct"] is not True
    # A compiling job holds the one worker for seconds; with no waiting room the next is refused.
    body = {"task": str(TASK), "files": candidate_files("cpu_compile_error"), "wait": False}
    server.ok("POST", "/v1/evaluate", body, status=202)
    code, headers, answer = server.request("POST", "/v1/evaluate", body)
    assert code == 429, answer
    assert error_of(answer)["code"] == "busy" and "--queue-per-device" in answer["error"]["message"]
    assert int(headers["Retry-After"]) >= 1
    health = server.ok("GET", "/v1/health")
    assert health["devices"][0]["device"] == "cpu" and health["devices"][0]["running"] == 1
    assert health["devices"][0]["state"] == "full"
    # A grade needs the same queue.
    sid = server.open()["session_id"]
    code, headers, answer = server.request("POST", f"/v1/sessions/{sid}/grade", {})
    assert code == 429 and "Retry-After" in headers
    # The refused grade did not end the session.
    assert server.call(sid, "c1", "Read", {"file_path": "model.py"})["calls_used"] == 1


def test_too_many_sessions_answers_429(tmp_path, servers):
    server = servers(tmp_path / "state", "--max-sessions", "1")
    sid = server.open()["session_id"]
    code, headers, answer = server.request("POST", "/v1/sessions", {"task": str(TASK)})
    assert code == 429 and error_of(answer)["code"] == "too_many_sessions" and "Retry-After" in headers
    server.ok("DELETE", f"/v1/sessions/{sid}")
    server.open()


def test_bearer_token(tmp_path, servers):
    server = servers(tmp_path / "state", env={"CUDA_AGENT_TOKEN": "s3cret"}, token="s3cret")
    code, headers, answer = server.request("GET", "/v1/tools", token=None)
    assert code == 401 and headers.get("WWW-Authenticate") == "Bearer"
    assert "Authorization: Bearer" in error_of(answer)["message"]
    code, _, answer = server.request("POST", "/v1/sessions", {"task": str(TASK)}, token="wrong")
    assert code == 401 and error_of(answer)["message"] == "the bearer token is wrong"
    assert server.request("GET", "/v1/health", token=None)[0] == 200
    tools = server.ok("GET", "/v1/tools")["tools"]
    assert [t["name"] for t in tools][:3] == ["Bash", "BashOutput", "KillBash"]


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_status_token_opens_the_status_page_and_nothing_else(tmp_path, servers):
    """A browser cannot send a bearer token: `/` asks for Basic auth (the browser's login dialog), whose
    password may be the read-only --status-token; that token opens no other route."""
    server = servers(tmp_path / "state", "--status-token", "peek", env={"CUDA_AGENT_TOKEN": "s3cret"},
                     token="s3cret")
    code, headers, answer = server.request("GET", "/", token=None)
    assert code == 401 and headers.get("WWW-Authenticate", "").startswith("Basic realm=")
    assert "--status-token" in error_of(answer)["message"]
    for password in ("peek", "s3cret"):  # either secret, any user name
        code, headers, page = server.request("GET", "/", token=None,
                                             headers={"Authorization": basic("anyone", password)})
        assert code == 200 and headers["Content-Type"].startswith("text/html"), page
        assert 'id="sessions-open"' in page
    assert server.request("GET", "/", token="peek")[0] == 200  # as a bearer token too
    assert server.request("GET", "/", token=None, headers={"Authorization": basic("u", "wrong")})[0] == 401
    assert server.request("GET", "/", token=None, headers={"Authorization": "Basic !!!"})[0] == 401
    # The status token opens nothing else, as bearer or Basic.
    for auth in ("Bearer peek", basic("u", "peek")):
        for method, path, body in (("GET", "/v1/tools", None), ("POST", "/v1/sessions", {"task": str(TASK)}),
                                   ("GET", "/v1/openapi.json", None)):
            code, headers, answer = server.request(method, path, body, token=None, headers={"Authorization": auth})
            assert code == 401 and headers.get("WWW-Authenticate") == "Bearer", (path, answer)
    code, _, answer = server.request("GET", "/v1/tools", token="peek")
    assert "opens only the status page" in error_of(answer)["message"]
    # The API token as a Basic password does not open the API (bearer only, as before).
    assert server.request("GET", "/v1/tools", token=None, headers={"Authorization": basic("u", "s3cret")})[0] == 401
    assert server.request("GET", "/v1/tools")[0] == 200


def test_status_token_usage_errors(tmp_path):
    for flags, says in ((["--status-token", "peek"], "--status-token needs --token"),
                        (["--token", "same", "--status-token", "same"], "must differ from --token")):
        run = subprocess.run([str(BIN), "serve", "--port", "0", "--state-dir", str(tmp_path / "s"), *flags],
                             capture_output=True, text=True, timeout=60, env=clean_env())
        assert run.returncode == 2 and says in run.stderr, run.stderr


def test_status_page_lists_the_sessions_it_counts_as_open(tmp_path, servers):
    """A graded session stays (until closed or expired) but is no longer open: the page's count and its
    table of open sessions say the same, and health agrees."""
    server = servers(tmp_path / "state")
    graded = server.open()["session_id"]
    kept = server.open()["session_id"]
    # No model_new.py: the grade fails fast (reward -1), and the session is graded.
    assert server.ok("POST", f"/v1/sessions/{graded}/grade", {})["reward"] == -1
    assert server.ok("GET", f"/v1/sessions/{graded}")["status"] == "graded"
    code, _, page = server.request("GET", "/")
    assert code == 200
    count = int(re.search(r'id="sessions-open">(\d+)<', page).group(1))
    table = page[page.index('<table id="sessions">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr><td>(s_[^<]*)</td>", table)
    assert count == len(rows) == server.ok("GET", "/v1/health")["sessions_open"] == 1, page
    assert rows == [kept] and graded not in table


def test_every_bad_input_has_its_status_and_message(tmp_path, servers):
    server = servers(tmp_path / "state", "--max-body-bytes", "4096")

    def refused(method, path, status, code=None, body=None, raw=None, says=None):
        got, _, answer = server.request(method, path, body=body, raw=raw)
        assert got == status, (method, path, got, answer)
        err = error_of(answer)
        if code:
            assert err["code"] == code, err
        if says:
            assert says in err["message"], err
        return err

    refused("POST", "/v1/sessions", 400, raw="{not json", says="not valid JSON")
    refused("POST", "/v1/sessions", 400, raw="[1, 2]", says="must be a JSON object")
    refused("POST", "/v1/sessions", 400, body={"task": str(TASK), "turns": 3}, says="unknown field 'turns'")
    refused("POST", "/v1/sessions", 400, body={}, says="missing field 'task'")
    refused("POST", "/v1/sessions", 400, body={"task": str(TASK), "turn_limit": "ten"},
            says="'turn_limit' must be a positive integer")
    refused("POST", "/v1/sessions", 400, body={"task": str(TASK), "device": "tpu"}, says="device 'tpu'")
    refused("POST", "/v1/sessions", 400, body={"task": str(tmp_path / "missing.py")}, says="task")
    refused("POST", "/v1/sessions", 400, body={"task": {"source": "x = 1", "extra": 1}}, says="'extra'")
    refused("GET", "/v1/sessions/s_nope", 404, code="not_found", says="s_nope")
    refused("POST", "/v1/sessions/s_nope/calls", 404, body={"call_id": "a", "tool": "Read", "arguments": {}})
    refused("POST", "/v1/sessions/s_nope/grade", 404, body={})
    refused("DELETE", "/v1/sessions/s_nope", 404)
    refused("GET", "/v1/jobs/j_nope", 404, says="j_nope")
    refused("GET", "/v1/nothing", 404, code="no_route")
    refused("PUT", "/v1/sessions", 405, code="method_not_allowed", says="POST")
    refused("POST", "/v1/evaluate", 400, body={"task": str(TASK), "files": {"../escape.cu": "x"}},
            says="../escape.cu")
    refused("POST", "/v1/evaluate", 400, body={"task": str(TASK), "files": {"/etc/passwd": "x"}},
            says="/etc/passwd")
    refused("POST", "/v1/evaluate", 400, body={"task": str(TASK), "files": {"kernels/a.cu": "x"}, "wait": 1},
            says="'wait'")
    # The judge's test-only switch that skips the static rules is no option of the service.
    refused("POST", "/v1/evaluate", 400,
            body={"task": str(TASK), "files": {"kernels/a.cu": "x"}, "test_skip_static": True},
            says="unknown field 'test_skip_static'")
    refused("POST", "/v1/sessions", 413, code="too_large", raw=json.dumps({"task": "x" * 8000}),
            says="--max-body-bytes")

    sid = server.open(turn_limit=1)["session_id"]
    refused("POST", f"/v1/sessions/{sid}/calls", 400, body={"tool": "Read"}, says="missing field 'call_id'")
    refused("POST", f"/v1/sessions/{sid}/calls", 400, body={"call_id": "a", "tool": "Read", "arguments": 5},
            says="'arguments'")
    refused("POST", f"/v1/sessions/{sid}/grade", 400, body={"now": True}, says="unknown field 'now'")
    # Tool errors are observations, not HTTP errors; each counts as a call.
    bad = server.call(sid, "c1", "Write", "{\"file_path\": ")
    assert bad["observation"]["is_error"] and "not valid JSON" in bad["observation"]["text"]
    refused("POST", f"/v1/sessions/{sid}/calls", 409, code="turn_limit",
            body={"call_id": "c2", "tool": "Read", "arguments": {"file_path": "model.py"}}, says="turn_limit")
    assert server.call(sid, "c1", "Read", {})["replayed"] is True
    server.ok("DELETE", f"/v1/sessions/{sid}")
    refused("POST", f"/v1/sessions/{sid}/calls", 409, code="session_closed",
            body={"call_id": "c3", "tool": "Read", "arguments": {}})
    assert not (server.state_dir / "sessions" / sid).exists()
    # Unknown tools and escaping paths inside a session: observations.
    sid = server.open()["session_id"]
    obs = server.call(sid, "u", "Delete", {"file_path": "model.py"})["observation"]
    assert obs["is_error"] and "unknown tool 'Delete'" in obs["text"]
    obs = server.call(sid, "e", "Write", {"file_path": "../../escape.txt", "content": "x"})["observation"]
    assert obs["is_error"] and "outside the workspace" in obs["text"]
    assert not (server.state_dir / "escape.txt").exists()


def test_call_ids_are_idempotent_and_sessions_separate(tmp_path, servers):
    server = servers(tmp_path / "state")
    a = server.open()["session_id"]
    b = server.open()["session_id"]
    command = {"command": "echo once >> counted.txt; wc -l < counted.txt"}
    first = server.call(a, "bash-1", "Bash", command)
    again = server.call(a, "bash-1", "Bash", command)
    assert first["replayed"] is False and again["replayed"] is True
    assert again["observation"] == first["observation"] and again["calls_used"] == first["calls_used"] == 1
    ws_a = server.state_dir / "sessions" / a / "workspace"
    assert (ws_a / "counted.txt").read_text() == "once\n"
    # The same call_id in another session is another call; b does not see a's files.
    other = server.call(b, "bash-1", "Bash", {"command": f"ls counted.txt; ls ../..; cat {ws_a.resolve()}/counted.txt"})
    text = other["observation"]["text"]
    assert other["replayed"] is False and text.count("No such file") == 2, text
    assert text.splitlines()[1] == b  # the sessions folder shows b's own entry only
    # Concurrent repeats of one call_id run it once.
    results = []
    threads = [threading.Thread(target=lambda: results.append(server.call(a, "bash-2", "Bash", command)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r["replayed"] for r in results) == [False, True, True, True]
    assert (ws_a / "counted.txt").read_text() == "once\nonce\n"


def test_idle_sessions_expire(tmp_path, servers):
    server = servers(tmp_path / "state")
    sid = server.open(ttl_s=1)["session_id"]
    kept = server.open()["session_id"]
    server.call(sid, "c1", "Read", {"file_path": "model.py"})
    time.sleep(3.5)
    status = server.ok("GET", f"/v1/sessions/{sid}")
    assert status["status"] == "expired" and status["calls"] == 1
    assert not (server.state_dir / "sessions" / sid).exists()
    code, _, answer = server.request("POST", f"/v1/sessions/{sid}/calls",
                                     {"call_id": "c2", "tool": "Read", "arguments": {}})
    assert code == 409 and error_of(answer)["code"] == "session_expired"
    assert server.call(sid, "c1", "Read", {})["replayed"] is True
    assert server.ok("GET", f"/v1/sessions/{kept}")["status"] == "open"


def test_sigterm_finishes_running_calls_and_exits_cleanly(tmp_path, servers):
    state = tmp_path / "state"
    server = servers(state)
    sid = server.open()["session_id"]
    answers = []
    slow = threading.Thread(target=lambda: answers.append(
        server.call(sid, "slow", "Bash", {"command": "sleep 2; echo finished"})))
    slow.start()
    time.sleep(0.7)
    server.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    code, _, answer = server.request("POST", "/v1/sessions", {"task": str(TASK)})
    assert code == 503 and error_of(answer)["code"] == "stopping"
    slow.join(timeout=30)
    assert answers and "finished" in answers[0]["observation"]["text"]
    assert server.proc.wait(timeout=60) == 0
    assert "stopped" in server.proc.stderr.read()
    # The session survives the restart, with its finished call.
    again = servers(state)
    assert again.ok("GET", f"/v1/sessions/{sid}")["status"] == "open"
    assert again.call(sid, "slow", "Bash", {})["observation"] == answers[0]["observation"]
    assert again.stop() == 0


def test_openapi_document_matches_the_routes(tmp_path, servers):
    server = servers(tmp_path / "state")
    doc = server.ok("GET", "/v1/openapi.json")
    assert doc["openapi"] == "3.1.0"
    served = {("/", "get"), ("/v1/health", "get"), ("/v1/tools", "get"), ("/v1/sessions", "post"),
              ("/v1/sessions/{id}", "get"), ("/v1/sessions/{id}", "delete"),
              ("/v1/sessions/{id}/calls", "post"), ("/v1/sessions/{id}/grade", "post"),
              ("/v1/evaluate", "post"), ("/v1/jobs/{id}", "get"), ("/v1/openapi.json", "get")}
    documented = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    assert documented == served
    for path, method in documented:
        code, _, answer = server.request(method.upper(), path.replace("{id}", "x"), body={})
        assert not (code == 404 and isinstance(answer, dict) and answer["error"]["code"] == "no_route"), path
    # Every $ref resolves.
    refs = re.findall(r'"\$ref": "#/components/schemas/(\w+)"', json.dumps(doc))
    assert refs and set(refs) <= set(doc["components"]["schemas"])
    code, headers, page = server.request("GET", "/")
    assert code == 200 and headers["Content-Type"].startswith("text/html") and "cuda-agent serve" in page
