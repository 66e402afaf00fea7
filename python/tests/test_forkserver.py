"""The fork server (cuda_agent_harness.forkserver): jobs as forked children, contained by the jail.

Each test talks to a server of its own over its Unix socket, as the judge does (docs/harness-protocol.md,
"Fork server"). The jail needs build/libcuda_agent_jail.so and user namespaces; tests that need it are
skipped where either is missing.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JAIL = REPO / "build" / "libcuda_agent_jail.so"


TOLERANCES = {"paper": {"mode": "fixed", "limits": {"default": {"atol": 0.01, "rtol": 0.01}}}}


def call(path, request, timeout=60):
    """Sends one request; returns every answer line until the server closes the connection."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(str(path))
    s.sendall((json.dumps(request) + "\n").encode())
    answers = [json.loads(line) for line in s.makefile() if line.strip()]
    s.close()
    return answers


@pytest.fixture
def server(tmp_path):
    sock = tmp_path / "fs.sock"
    args = [sys.executable, "-m", "cuda_agent_harness.forkserver", "--socket", str(sock),
            "--idle-timeout", "60"]
    if JAIL.exists():
        args += ["--jail-library", str(JAIL)]
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), PYTHONHASHSEED="0")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    hello = json.loads(proc.stdout.readline())
    assert hello["event"] == "listening" and hello["cuda_initialized"] is False
    yield sock, hello, proc
    proc.terminate()
    proc.wait(10)


def job(tmp_path, name, spec, jail=None, env=None):
    folder = tmp_path / name
    folder.mkdir()
    os.chmod(folder, 0o777)
    spec = dict(spec, result_path=str(folder / "result.json"))
    (folder / "spec.json").write_text(json.dumps(spec))
    return folder, {"op": "run", "job": name.split("-")[0], "spec_path": str(folder / "spec.json"),
                    "cwd": str(folder), "env": env or {"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
                    "stdout_path": str(folder / "out.txt"), "stderr_path": str(folder / "err.txt"),
                    "jail": jail}


def python_paths():
    """What a jailed job needs to read: the interpreter's installation and the harness."""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return sorted(prefixes | {str(REPO / "python")} | {os.path.dirname(os.path.realpath(sys.executable))})


def test_ping_reports_a_clean_parent(server):
    sock, hello, _ = server
    pong = call(sock, {"op": "ping"})[0]
    assert pong["event"] == "pong" and pong["cuda_initialized"] is False
    assert pong["threads"] == 1, "the parent must stay single-threaded to fork safely"


def test_a_job_runs_with_the_requested_environment(server, tmp_path):
    sock, _, _ = server
    folder, request = job(tmp_path, "static-1", {"candidate_dir": str(tmp_path / "missing")},
                          env={"PATH": "/bin", "HOME": "/tmp", "MARKER": "m1"})
    started, ended = call(sock, request)
    assert started["event"] == "started" and ended["event"] == "ended", ended
    assert ended["exit_code"] == 0 and ended["jail"] == "ok"
    result = json.loads((folder / "result.json").read_text())
    assert result["error_kind"] == "missing_model_new"


def test_a_malformed_request_is_answered_not_fatal(server):
    sock, _, _ = server
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(sock))
    s.sendall(b"{not json\n")
    answer = json.loads(s.makefile().readline())
    assert answer["event"] == "error" and "malformed" in answer["message"]
    assert call(sock, {"op": "ping"})[0]["event"] == "pong"
    assert call(sock, {"op": "run"})[0]["event"] == "error"


def test_a_disconnected_client_kills_its_job(server, tmp_path):
    sock, _, proc = server
    # a task_check job that sleeps in get_inputs: it stays in the job until killed
    task = tmp_path / "slow.py"
    task.write_text("import time, torch\nclass Model(torch.nn.Module):\n    def forward(self, x): return x\n"
                    "def get_inputs():\n    time.sleep(120)\n    return [torch.ones(1)]\n"
                    "def get_init_inputs(): return []\n")
    _, request = job(tmp_path, "task_check-1", {"device": "cpu", "tasks": [{"name": "slow", "path": str(task)}],
                                                "tolerances": TOLERANCES, "seed": 1,
                                                "progress_path": str(tmp_path / "progress.jsonl")})
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(sock))
    s.sendall((json.dumps(request) + "\n").encode())
    pid = json.loads(s.makefile().readline())["pid"]
    os.kill(pid, 0)  # running
    s.close()
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        call(sock, {"op": "ping"})  # lets the server reap
        time.sleep(0.1)
    else:
        pytest.fail("the job outlived its client")


@pytest.mark.skipif(not JAIL.exists(), reason="build/libcuda_agent_jail.so not built")
def test_jailed_job_sees_only_its_folders(server, tmp_path):
    sock, hello, _ = server
    if hello.get("jail") != "ok":
        pytest.skip(f"jail unavailable: {hello.get('jail')}")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "expected.txt").write_text("42")
    task = tmp_path / "task" / "model.py"
    task.parent.mkdir()
    # The task's get_inputs probes the sandbox from inside the job, and records what it found.
    task.write_text(f"""
import os, socket, torch
def probe():
    found = {{}}
    found["uid"] = os.getuid()
    found["secret"] = os.path.exists({str(secret / 'expected.txt')!r})
    found["server_socket"] = os.path.exists({str(sock)!r})
    found["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=1); found["net"] = True
    except OSError:
        found["net"] = False
    fds = {{}}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            pass
    found["fds"] = fds
    return found
class Model(torch.nn.Module):
    def forward(self, x): return x
def get_inputs():
    print("PROBE", repr(probe()), flush=True)
    return [torch.ones(2)]
def get_init_inputs(): return []
""")
    folder, request = job(tmp_path, "task_check-2", {
        "device": "cpu", "tasks": [{"name": "probe", "path": str(task)}], "tolerances": TOLERANCES, "seed": 1,
        "progress_path": str(tmp_path / "task_check-2" / "progress.jsonl")},
        jail={"writable": [], "read_only": python_paths() + [str(task.parent)],
              "hidden": [str(tmp_path)], "drop_host_uid": False})
    request["jail"]["writable"] = [str(folder)]
    started, ended = call(sock, request)
    assert ended["exit_code"] == 0 and ended["jail"] == "ok", (folder / "err.txt").read_text()
    line = next(s for s in (folder / "out.txt").read_text().splitlines() if s.startswith("PROBE"))
    found = eval(line[len("PROBE "):])  # noqa: S307 - our own repr of plain values
    assert found["uid"] == 65534
    assert found["secret"] is False, "a hidden folder was visible in the jail"
    assert found["server_socket"] is False, "the fork server's socket was visible in the jail"
    assert found["pids"] == [1, 2], "the job saw processes outside its own namespace"
    assert found["net"] is False
    inherited = [t for t in found["fds"].values() if t.startswith(("socket:", "pipe:", "anon_inode:"))]
    assert not inherited, f"the job inherited descriptors of the server: {found['fds']}"


@pytest.mark.skipif(not JAIL.exists(), reason="build/libcuda_agent_jail.so not built")
def test_a_crash_in_the_jail_reports_the_signal(server, tmp_path):
    sock, hello, _ = server
    if hello.get("jail") != "ok":
        pytest.skip(f"jail unavailable: {hello.get('jail')}")
    task = tmp_path / "crash" / "crash.py"
    task.parent.mkdir()
    task.write_text("import ctypes, torch\nclass Model(torch.nn.Module):\n    def forward(self, x): return x\n"
                    "def get_inputs():\n    ctypes.string_at(0)\n"
                    "def get_init_inputs(): return []\n")
    folder, request = job(tmp_path, "task_check-3", {
        "device": "cpu", "tasks": [{"name": "crash", "path": str(task)}], "tolerances": TOLERANCES, "seed": 1,
        "progress_path": str(tmp_path / "p.jsonl")},
        jail={"read_only": python_paths() + [str(task.parent)], "drop_host_uid": False})
    request["jail"]["writable"] = [str(folder)]
    _, ended = call(sock, request)
    assert ended["signal"] == signal.SIGSEGV and ended["jail"] == "ok", ended


def standby_request(tmp_path, name, timeout_s=60, max_waiting=1, cleanup=(), record=None):
    """A `static` job offered as a standby: it waits for a go (consumed) in its own folder."""
    folder, request = job(tmp_path, name, {})
    spec = json.loads((folder / "spec.json").read_text())
    spec["wait_for"] = {"go": str(folder / "go"), "stop": str(folder / "stop"), "timeout_s": timeout_s,
                        "consume": True}
    (folder / "spec.json").write_text(json.dumps(spec))
    request["standby"] = {"key": "k-" + str(tmp_path), "max_waiting": max_waiting,
                          "cleanup": [str(p) for p in cleanup], "record": record or {"dir": str(folder)}}
    return folder, request


def test_a_standby_outlives_its_client_and_runs_for_whoever_claims_it(server, tmp_path):
    sock, _, _ = server
    key = "k-" + str(tmp_path)
    assert call(sock, {"op": "claim", "key": key}) == [{"event": "none"}]
    folder, request = standby_request(tmp_path, "static-1", record={"dir": "marker"})
    started, waiting = call(sock, request)
    assert started["event"] == "started" and waiting == {"event": "waiting"}
    os.kill(started["pid"], 0)  # alive after its client left
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(str(sock))
    s.sendall((json.dumps({"op": "claim", "key": key}) + "\n").encode())
    lines = s.makefile()
    claimed = json.loads(lines.readline())
    assert claimed["event"] == "claimed" and claimed["pid"] == started["pid"]
    assert claimed["record"] == {"dir": "marker"} and claimed["waited_seconds"] >= 0
    (folder / "go.tmp").write_text(json.dumps({"candidate_dir": str(tmp_path / "missing")}))
    os.rename(folder / "go.tmp", folder / "go")
    ended = json.loads(lines.readline())
    s.close()
    assert ended["event"] == "ended" and ended["exit_code"] == 0, ended
    assert json.loads((folder / "result.json").read_text())["error_kind"] == "missing_model_new"
    assert not (folder / "go").exists(), "a consumed go is deleted once read"
    assert call(sock, {"op": "claim", "key": key}) == [{"event": "none"}]


def test_standbys_beyond_max_waiting_are_declined_before_a_fork(server, tmp_path):
    sock, _, _ = server
    _, first = standby_request(tmp_path, "static-1", max_waiting=1)
    assert call(sock, first)[-1] == {"event": "waiting"}
    _, second = standby_request(tmp_path, "static-2", max_waiting=1)
    answer = call(sock, second)
    assert len(answer) == 1 and answer[0]["event"] == "declined" and "1 standby" in answer[0]["message"]


def test_an_unclaimed_standby_that_gives_up_is_cleaned_up(server, tmp_path):
    sock, _, _ = server
    leftover = tmp_path / "leftover"
    (leftover / "inner").mkdir(parents=True)
    folder, request = standby_request(tmp_path, "static-1", timeout_s=0.5, cleanup=[leftover])
    assert call(sock, request)[-1] == {"event": "waiting"}
    deadline = time.time() + 30
    while time.time() < deadline and leftover.exists():
        time.sleep(0.05)
    assert not leftover.exists()
    assert json.loads((folder / "result.json").read_text())["error_kind"] == "not_started"
    assert call(sock, {"op": "claim", "key": "k-" + str(tmp_path)}) == [{"event": "none"}]


@pytest.mark.parametrize("standby, message", [
    ({"key": ""}, "non-empty string 'key'"),
    ({"key": "k", "cleanup": ["relative"]}, "absolute paths"),
    ({"key": "k", "max_waiting": 0}, "positive integer"),
    ({"key": "k", "record": []}, "JSON object"),
    ({"key": "k", "group": "gpu-0", "group_max": 0}, "'group_max' a positive integer"),
])
def test_a_malformed_standby_is_refused(server, tmp_path, standby, message):
    sock, _, _ = server
    _, request = job(tmp_path, "static-1", {})
    request["standby"] = standby
    answer = call(sock, request)
    assert answer[0]["event"] == "error" and message in answer[0]["message"]


def claim_on(sock, key):
    """Claims the standby under `key` on a connection this test keeps: (socket, its lines, claimed)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(str(sock))
    s.sendall((json.dumps({"op": "claim", "key": key}) + "\n").encode())
    lines = s.makefile()
    return s, lines, json.loads(lines.readline())


def test_a_released_standby_waits_again_for_the_next_claim(server, tmp_path):
    sock, _, _ = server
    key = "k-" + str(tmp_path)
    folder, request = standby_request(tmp_path, "static-1", record={"dir": "kept"})
    started, _ = call(sock, request)
    s, lines, claimed = claim_on(sock, key)
    assert claimed["event"] == "claimed" and claimed["pid"] == started["pid"]
    assert call(sock, {"op": "claim", "key": key}) == [{"event": "none"}]  # it is this client's now
    s.sendall(b'{"op": "release"}\n')
    assert json.loads(lines.readline()) == {"event": "released"}
    assert lines.readline() == ""  # the server closed the connection
    s.close()
    time.sleep(0.2)
    os.kill(started["pid"], 0)  # the client left, the job lives on
    s, lines, again = claim_on(sock, key)
    assert again["event"] == "claimed" and again["pid"] == started["pid"]
    assert again["record"] == {"dir": "kept"} and again["waited_seconds"] < 5
    (folder / "go.tmp").write_text("go")
    os.rename(folder / "go.tmp", folder / "go")
    assert json.loads(lines.readline())["event"] == "ended"
    s.close()


def test_a_job_that_was_never_a_standby_cannot_be_released(server, tmp_path):
    sock, _, _ = server
    folder, request = job(tmp_path, "static-1", {"wait_for": {"go": str(tmp_path / "never"),
                                                              "stop": str(tmp_path / "stop")}})
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(str(sock))
    s.sendall((json.dumps(request) + "\n").encode())
    lines = s.makefile()
    assert json.loads(lines.readline())["event"] == "started"
    s.sendall(b'{"op": "release"}\n')
    declined = json.loads(lines.readline())
    assert declined["event"] == "declined" and "not a standby" in declined["message"]
    (tmp_path / "stop").write_text("stop")
    assert json.loads(lines.readline())["event"] == "ended"  # still this client's job
    s.close()


def assert_ended_and_cleaned_up(pid, leftover):
    """The server killed the job `pid` and removed its cleanup path `leftover`."""
    deadline = time.time() + 30
    while time.time() < deadline and leftover.exists():
        time.sleep(0.05)
    assert not leftover.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_standby_idle_too_long_is_ended_by_the_server_and_cleaned_up(server, tmp_path):
    sock, _, _ = server
    leftover = tmp_path / "leftover"
    leftover.mkdir()
    _, request = standby_request(tmp_path, "static-1", cleanup=[leftover])
    request["standby"]["idle_s"] = 0.5
    started, waiting = call(sock, request)
    assert waiting == {"event": "waiting"}
    assert_ended_and_cleaned_up(started["pid"], leftover)
    assert call(sock, {"op": "claim", "key": "k-" + str(tmp_path)}) == [{"event": "none"}]


def test_a_claimed_standby_whose_client_dies_is_killed_and_cleaned_up(server, tmp_path):
    sock, _, _ = server
    leftover = tmp_path / "leftover"
    leftover.mkdir()
    _, request = standby_request(tmp_path, "static-1", cleanup=[leftover])
    started, _ = call(sock, request)
    s, lines, claimed = claim_on(sock, "k-" + str(tmp_path))
    assert claimed["event"] == "claimed"
    lines.close()
    s.close()  # the claiming judge died
    assert_ended_and_cleaned_up(started["pid"], leftover)


def test_a_group_keeps_its_most_recent_standbys_and_ends_the_longest_waiting(server, tmp_path):
    sock, _, _ = server
    pids, leftovers = [], []
    for i in range(3):  # three keys, one group of at most two
        sub = tmp_path / f"s{i}"
        sub.mkdir()
        leftovers.append(sub / "leftover")
        leftovers[-1].mkdir()
        _, request = standby_request(sub, f"static-{i}", cleanup=[leftovers[-1]])
        request["standby"].update(group="gpu-0", group_max=2)
        started, waiting = call(sock, request)
        assert waiting == {"event": "waiting"}
        pids.append(started["pid"])
        time.sleep(0.05)
    assert_ended_and_cleaned_up(pids[0], leftovers[0])
    os.kill(pids[1], 0)
    os.kill(pids[2], 0)
    # A release into a full group makes room too: the one that waited longest goes.
    s, lines, claimed = claim_on(sock, "k-" + str(tmp_path / "s2"))
    assert claimed["pid"] == pids[2]
    sub = tmp_path / "s3"
    sub.mkdir()
    _, request = standby_request(sub, "static-3")
    request["standby"].update(group="gpu-0", group_max=2)
    assert call(sock, request)[-1] == {"event": "waiting"}  # s1 and s3 wait, s2 is claimed
    s.sendall(b'{"op": "release"}\n')
    assert json.loads(lines.readline()) == {"event": "released"}
    lines.close()
    s.close()
    assert_ended_and_cleaned_up(pids[1], leftovers[1])
    os.kill(pids[2], 0)
