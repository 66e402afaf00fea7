"""The MCP face of the environment server, with the official MCP Python SDK (PyPI `mcp`) as the client:
over stdio (`cuda-agent mcp --task T`) and over Streamable HTTP (`/mcp` of a real `cuda-agent serve`).
Each transport lists the tools, writes the CPU relu_scale kernel into the workspace, compiles it with
the Bash tool, grades (the reward is a number) and calls an unknown tool (a JSON-RPC error). Raw
JSON-RPC checks the protocol's errors (parse error, invalid request, method not found), the version
negotiation and the HTTP status codes. The status page at `/` is rendered in headless Chromium.

The binary is <repo>/build/cuda-agent unless $CUDA_AGENT_BIN names another; the task is relu_scale
shrunk to small inputs so that a CPU grade takes seconds.
"""

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp", reason="the MCP SDK is not installed (scripts/setup.sh installs it)")
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from test_bench import count_colours, read_png  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")
CANDIDATE = REPO / "examples" / "relu_scale" / "candidates" / "cpu_correct"
AGENT_TOOLS = {"Bash", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "TodoWrite", "BashOutput",
               "KillBash"}
# Judge flags that keep a CPU grade short; timings do not matter here.
FAST = ["--device", "cpu", "--baselines", "eager", "--warmup", "1", "--iters", "3", "--checks", "2",
        "--baseline-drift", "100", "--baseline-max-age", "0"]
BAR_BLUE = "#2f6fde"  # the status page's throughput bars


@pytest.fixture(scope="module", autouse=True)
def need_binary():
    if not (BIN.is_file() and os.access(BIN, os.X_OK)):
        pytest.skip(f"{BIN} is not built")


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    source = (REPO / "examples" / "relu_scale" / "model.py").read_text()
    small = source.replace("batch_size = 2048", "batch_size = 64").replace("dim = 2048", "dim = 256")
    assert small != source
    path = tmp_path_factory.mktemp("task") / "relu_scale.py"
    path.write_text(small)
    return path


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_AGENT_")}
    if os.environ.get("CUDA_AGENT_CACHE_DIR"):
        env["CUDA_AGENT_CACHE_DIR"] = os.environ["CUDA_AGENT_CACHE_DIR"]
    return env


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def agent_round_trip(client):
    """The scenario both transports run: list, write, compile, grade, unknown tool. Returns the grade."""
    tools = await client.list_tools()
    names = {t.name for t in tools.tools}
    assert AGENT_TOOLS <= names, names
    assert {"task", "grade", "evaluate"} <= names, names
    for tool in tools.tools:
        assert tool.input_schema["type"] == "object", tool.name
    assert client.protocol_version == "2025-11-25"

    task_text = text_of(await client.call_tool("task", {}))
    assert "class Model" in task_text and "SKILL.md" in task_text

    for path in sorted(CANDIDATE.rglob("*")):
        if path.is_file():
            rel = str(path.relative_to(CANDIDATE))
            written = await client.call_tool("Write", {"file_path": rel, "content": path.read_text()})
            assert not written.is_error, text_of(written)
    read = await client.call_tool("Read", {"file_path": "model_new.py"})
    assert not read.is_error and "ModelNew" in text_of(read)

    compiled = await client.call_tool("Bash", {"command": "bash utils/compile.sh", "timeout": 300})
    assert not compiled.is_error, text_of(compiled)
    assert (await client.call_tool("Bash", {"command": "ls build 2>/dev/null; ls"})).is_error is False

    # A failing tool is a result with isError, never a protocol error.
    missing = await client.call_tool("Read", {"file_path": "no_such_file.py"})
    assert missing.is_error
    bad_args = await client.call_tool("Write", {"content": "x"})
    assert bad_args.is_error and "file_path" in text_of(bad_args)

    graded = await client.call_tool("grade", {})
    assert not graded.is_error, text_of(graded)
    reward = graded.structured_content["reward"]
    assert isinstance(reward, (int, float)) and not isinstance(reward, bool), graded.structured_content
    assert reward >= 1, text_of(graded)  # the correct candidate
    assert f"reward: {reward}" in text_of(graded)

    with pytest.raises(MCPError) as unknown:
        await client.call_tool("NoSuchTool", {})
    assert unknown.value.code == -32602 and "NoSuchTool" in str(unknown.value)
    return graded


# ---- stdio ----

def stdio_params(task, state_dir):
    return StdioServerParameters(command=str(BIN),
                                 args=["mcp", "--task", str(task), "--state-dir", str(state_dir), *FAST],
                                 env=clean_env())


def test_stdio_with_the_sdk_client(task, tmp_path):
    async def run():
        async with Client(stdio_params(task, tmp_path / "state")) as client:
            assert client.server_info.name == "cuda-agent"
            assert "grade" in (client.instructions or "")
            # evaluate judges inline files without the workspace; a malformed call is a tool error.
            files = {str(p.relative_to(CANDIDATE)): p.read_text() for p in CANDIDATE.rglob("*") if p.is_file()}
            evaluated = await client.call_tool("evaluate", {"files": files})
            assert not evaluated.is_error, text_of(evaluated)
            assert evaluated.structured_content["reward"] >= 1, text_of(evaluated)
            files["kernels/relu_scale.cpp"] = files["kernels/relu_scale.cpp"].replace("{", "{ oops", 1)
            broken = await client.call_tool("evaluate", {"files": files})
            assert broken.structured_content["reward"] == -1, text_of(broken)
            assert "build" in broken.structured_content["result"]["reason"]
            assert (await client.call_tool("evaluate", {})).is_error
            return await agent_round_trip(client)

    asyncio.run(run())
    # The session's workspace holds what the client wrote.
    written = list((tmp_path / "state").rglob("workspace/kernels/relu_scale.cpp"))
    assert len(written) == 1, written


class RawStdio:
    """A `cuda-agent mcp` process spoken to line by line, to send what the SDK never would."""

    def __init__(self, task, state_dir):
        self.proc = subprocess.Popen([str(BIN), "mcp", "--task", str(task), "--state-dir", str(state_dir),
                                      *FAST], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=clean_env())

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def ask(self, line):
        self.send(line)
        answer = self.proc.stdout.readline()
        assert answer, self.proc.stderr.read()[-2000:]
        return json.loads(answer)

    def close(self):
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=60)
        rest = self.proc.stdout.read()
        return rc, rest


def test_stdio_protocol_errors_and_version_negotiation(task, tmp_path):
    raw = RawStdio(task, tmp_path / "state")
    try:
        parse = raw.ask("{not json")
        assert parse["error"]["code"] == -32700 and parse["id"] is None
        for bad in ['{"jsonrpc": "2.0", "id": 1}', '{"jsonrpc": "1.0", "id": 2, "method": "ping"}',
                    '[{"jsonrpc": "2.0", "id": 3, "method": "ping"}]', '"ping"',
                    '{"jsonrpc": "2.0", "id": 4, "method": 7}']:
            answer = raw.ask(bad)
            assert answer["error"]["code"] == -32600, (bad, answer)
        assert raw.ask('{"jsonrpc": "2.0", "id": 2, "method": "ping"}'.replace("1.0", "2.0")) == {
            "jsonrpc": "2.0", "id": 2, "result": {}}
        # Before initialize: the tools are refused; an unknown method is unknown.
        early = raw.ask('{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}')
        assert early["error"]["code"] == -32600 and "initialize" in early["error"]["message"]
        unknown = raw.ask('{"jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": {}}')
        assert unknown["error"]["code"] == -32601
        # An old client gets its own version back.
        init = raw.ask(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}}))
        assert init["result"]["protocolVersion"] == "2024-11-05", init
        assert init["result"]["capabilities"]["tools"] == {"listChanged": False}
        again = raw.ask(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "initialize",
                                    "params": {"protocolVersion": "2024-11-05"}}))
        assert again["error"]["code"] == -32600
        raw.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')  # no answer
        listed = raw.ask('{"jsonrpc": "2.0", "id": "s-9", "method": "tools/list", "params": {}}')
        assert listed["id"] == "s-9" and len(listed["result"]["tools"]) == 13
        for params, code in [({}, -32602), ({"name": 3}, -32602), ({"name": "Nope"}, -32602),
                             ({"name": "Read", "arguments": [1]}, -32602)]:
            answer = raw.ask(json.dumps({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": params}))
            assert answer["error"]["code"] == code, (params, answer)
        unknown = raw.ask('{"jsonrpc": "2.0", "id": 11, "method": "resources/list"}')
        assert unknown["error"]["code"] == -32601
    finally:
        rc, rest = raw.close()
    assert rc == 0 and rest == ""  # nothing but answers on stdout


def test_stdio_negotiates_an_unknown_version_to_the_latest(task, tmp_path):
    raw = RawStdio(task, tmp_path / "state")
    try:
        missing = raw.ask('{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}')
        assert missing["error"]["code"] == -32602  # and the session is still not initialized
        init = raw.ask(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize",
                                   "params": {"protocolVersion": "2099-01-01", "capabilities": {}}}))
        assert init["result"]["protocolVersion"] == "2025-11-25"
    finally:
        raw.close()


def test_mcp_usage_errors():
    proc = subprocess.run([str(BIN), "mcp"], capture_output=True, text=True, timeout=60, env=clean_env())
    assert proc.returncode == 2 and "--task is required" in proc.stderr and proc.stdout == ""


# ---- Streamable HTTP against `cuda-agent serve` ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(task, tmp_path_factory):
    state = tmp_path_factory.mktemp("serve")
    port = free_port()
    log = open(state / "serve.log", "w")
    proc = subprocess.Popen([str(BIN), "serve", "--host", "127.0.0.1", "--port", str(port), "--state-dir",
                             str(state / "state"), "--mcp-task", str(task), *FAST],
                            stdout=log, stderr=subprocess.STDOUT, env=clean_env())
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            with urllib.request.urlopen(base + "/v1/health", timeout=5) as r:
                if r.status == 200:
                    break
        except (urllib.error.URLError, ConnectionError):
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            pytest.fail("serve did not start: " + (state / "serve.log").read_text()[-3000:])
        time.sleep(0.2)
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def http(method, url, body=None, headers=None):
    data = body.encode() if isinstance(body, str) else body
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})


def test_http_with_the_sdk_client(server):
    async def run():
        async with Client(server + "/mcp") as client:
            return await agent_round_trip(client)

    graded = asyncio.run(run())
    # The grade is on the status page's data, with its reason.
    status, _, body = http("GET", server + "/")
    assert status == 200
    reason = graded.structured_content["result"]["reason"]
    assert reason and reason.split(",")[0] in body


def test_http_status_codes_and_errors(server):
    url = server + "/mcp"
    status, _, body = http("POST", url, "{not json")
    assert status == 400 and json.loads(body)["error"]["code"] == -32700
    status, _, body = http("POST", url, '{"jsonrpc": "2.0", "id": 1}')
    assert status == 400 and json.loads(body)["error"]["code"] == -32600
    status, _, body = http("POST", url, '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}')
    assert status == 400 and "Mcp-Session-Id" in json.loads(body)["error"]["message"]
    status, _, _ = http("GET", url)
    assert status == 405
    status, _, _ = http("POST", url, INIT, {"Origin": "http://evil.example"})
    assert status == 403

    status, headers, body = http("POST", url, INIT)
    assert status == 200, body
    session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
    assert len(session) >= 16 and json.loads(body)["result"]["protocolVersion"] == "2025-06-18"
    h = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
    status, _, body = http("POST", url, '{"jsonrpc": "2.0", "method": "notifications/initialized"}', h)
    assert status == 202 and body == ""
    status, _, body = http("POST", url, '{"jsonrpc": "2.0", "id": 3, "method": "nope/nope"}', h)
    assert status == 200 and json.loads(body)["error"]["code"] == -32601
    status, _, body = http("POST", url, '{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}',
                           {**h, "MCP-Protocol-Version": "1999-01-01"})
    assert status == 400
    status, _, body = http("POST", url, '{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}', h)
    assert status == 200 and len(json.loads(body)["result"]["tools"]) == 13
    status, _, _ = http("DELETE", url, headers=h)
    assert status == 204
    status, _, body = http("POST", url, '{"jsonrpc": "2.0", "id": 6, "method": "ping"}', h)
    assert status == 404
    status, _, _ = http("DELETE", url, headers=h)
    assert status == 404

    # A task named in the URL; a task that does not exist fails at the first tool call, as a tool error.
    status, headers, body = http("POST", url + "?task=/no/such/task.py", INIT)
    assert status == 200, body
    session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
    call = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "Read", "arguments": {"file_path": "model.py"}}})
    status, _, body = http("POST", url, call, {"Mcp-Session-Id": session})
    result = json.loads(body)["result"]
    assert status == 200 and result["isError"] is True, body
    assert "no/such/task.py" in result["content"][0]["text"]
    http("DELETE", url, headers={"Mcp-Session-Id": session})


# ---- the status page in a real browser ----

def test_status_page_in_headless_chromium(server, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("chromium is not installed (scripts/setup.sh installs it)")

    # One grade made here (its session is graded, then closed) and one session that stays open
    # while the browser looks.
    async def write_candidate(client):
        for path in sorted(CANDIDATE.rglob("*")):
            if path.is_file():
                written = await client.call_tool("Write", {"file_path": str(path.relative_to(CANDIDATE)),
                                                           "content": path.read_text()})
                assert not written.is_error, text_of(written)

    async def open_and_grade():
        async with Client(server + "/mcp") as grader:
            await write_candidate(grader)
            graded = await grader.call_tool("grade", {})
            assert not graded.is_error, text_of(graded)
        async with Client(server + "/mcp") as working:
            await write_candidate(working)
            health = json.loads(http("GET", server + "/v1/health")[2])
            dom = run_chromium(chromium, ["--dump-dom"], server + "/")
            shot = tmp_path / "status.png"
            run_chromium(chromium, [f"--screenshot={shot}", "--window-size=1000,1000"], server + "/")
            return graded, health, dom, shot

    graded, health, dom, shot = asyncio.run(open_and_grade())
    sessions_open = health["sessions_open"]
    assert sessions_open >= 1
    assert f'id="sessions-open">{sessions_open}<' in dom, dom[:3000]
    reason = graded.structured_content["result"]["reason"]
    assert html_escape(reason) in dom, (reason, dom[:3000])
    assert '<svg id="throughput"' in dom and 'class="bar"' in dom
    width, height, rows = read_png(shot)
    assert (width, height) == (1000, 1000)
    # The throughput bars (at least the two grades of this file) are drawn in the page's blue.
    assert count_colours(rows, [BAR_BLUE])[BAR_BLUE] > 200


def run_chromium(chromium, flags, url):
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           *flags, url], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def html_escape(text):
    """As the browser serializes a text node: only &, < and > are escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
