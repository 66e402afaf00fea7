"""Abuse probes: each runs a hostile command through `cuda-agent sandbox run` and asserts it is
contained — once for each backend: bubblewrap and the jail (sandbox/jail.h, the same code the fork
server's jobs enter). A backend that cannot run here is skipped, and `cuda-agent sandbox info` says why.

The commands use sh, bash and perl (always on Debian), so no interpreter has to be bound in.
"""

import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")


BACKENDS = ("bwrap", "jail")
ENV = dict(os.environ)


def sandbox_info(backend):
    if not BIN.exists():
        return "missing binary"
    env = dict(os.environ, CUDA_AGENT_SANDBOX=backend)
    return subprocess.run([str(BIN), "sandbox", "info"], capture_output=True, text=True, env=env).stdout


@pytest.fixture(autouse=True, params=BACKENDS)
def backend(request):
    """Every probe runs under each backend that works here."""
    info = sandbox_info(request.param)
    if info.split(":", 1)[0] not in ("full", "degraded") or request.param not in info.split(";")[0]:
        pytest.skip(f"{request.param} sandbox unavailable here: {info.strip()}")
    ENV["CUDA_AGENT_SANDBOX"] = request.param
    return request.param


def run(command, *flags, timeout=20):
    """Runs `sh -c command` in the sandbox; returns the JSON outcome."""
    argv = [str(BIN), "sandbox", "run", "--json", "--timeout", str(timeout), *flags, "--",
            "/bin/sh", "-c", command]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 30, env=ENV)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def work(tmp_path):
    d = tmp_path / "work"
    d.mkdir()
    return d


def test_runs_as_nobody_without_capabilities(work):
    r = run("id -u; grep CapEff /proc/self/status", "--writable", str(work))
    assert r["exit_code"] == 0, r
    lines = r["stdout"].split("\n")
    assert lines[0] == "65534"
    assert lines[1].split()[1] == "0000000000000000"


def test_tcp_to_a_listener_on_the_host_fails(work):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted = []
    server.settimeout(5)
    def accept():
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.daemon = True
    t.start()
    r = run(f"bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo CONNECTED")
    assert "CONNECTED" not in r["stdout"]
    t.join(6)
    assert not accepted, "the sandbox reached a listener on the host"
    server.close()


def test_dns_resolution_fails():
    r = run("getent hosts pypi.org && echo RESOLVED")
    assert "RESOLVED" not in r["stdout"]


def test_only_loopback_interface():
    r = run("cat /proc/net/dev")
    names = [l.split(":")[0].strip() for l in r["stdout"].splitlines()[2:]]
    assert names == ["lo"], names


def test_protected_file_inside_the_work_dir_is_read_only(work):
    protected = work / "model.py"
    protected.write_text("reference")
    r = run(f"echo hacked > {protected} && echo WROTE", "--writable", str(work), "--read-only", str(protected))
    assert "WROTE" not in r["stdout"]
    assert protected.read_text() == "reference"


def test_cannot_write_outside_the_work_dir(work, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    r = run(f"touch {outside}/x; touch /usr/x; touch {REPO}/x; echo done", "--writable", str(work))
    assert "done" in r["stdout"]
    assert not (outside / "x").exists()
    assert not (REPO / "x").exists()
    assert not Path("/usr/x").exists()


def test_private_tmp_leaves_no_trace(work):
    marker = f"/tmp/cuda-agent-probe-{os.getpid()}"
    r = run(f"echo x > {marker} && cat {marker}")
    assert r["stdout"].strip() == "x"
    assert not Path(marker).exists()


def test_cannot_read_another_workspace(tmp_path, work):
    other = tmp_path / "cache" / "work" / "judge-other"
    other.mkdir(parents=True)
    (other / "expected_0.pt").write_text("the answer")
    r = run(f"cat {other}/expected_0.pt; ls {tmp_path}/cache/work", "--writable", str(work),
            "--hide", str(tmp_path / "cache"))
    assert "the answer" not in r["stdout"]
    assert "judge-other" not in r["stdout"]


def test_home_folders_are_hidden():
    r = run("ls -A /root /home 2>/dev/null | grep -v ':$' | grep -v '^$' | wc -l")
    assert r["stdout"].strip() == "0", r


def test_fork_bomb_is_contained(work):
    start = time.time()
    r = run("bomb() { bomb | bomb & }; bomb; sleep 5", "--pids", "64", timeout=10)
    assert time.time() - start < 40
    # Nothing of it survives the run.
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-u", "65534", "-f", "bomb"], capture_output=True, text=True).stdout
    assert left.strip() == "", left


def test_memory_bomb_is_killed(work):
    # A 3 GB string under a 256 MiB limit: the kernel's OOM killer ends the allocating process.
    r = run("perl -e '$x = \"a\" x 3_000_000_000; print \"ALLOCATED\"'", "--memory", "256", timeout=30)
    assert "ALLOCATED" not in r["stdout"], r
    assert r["oom_killed"] or r["signal"] or "Out of memory" in r["stderr"], r


def test_disk_filling_is_bounded(work):
    r = run(f"head -c 500000000 /dev/zero > {work}/big; echo exit=$?", "--writable", str(work),
            "--file-size", "16")
    assert (work / "big").stat().st_size <= 16 * 2**20
    r = run("head -c 2000000000 /dev/zero > /tmp/big; ls -l /tmp/big", "--file-size", "4000", timeout=30)
    # The private /tmp is a bounded tmpfs (1 GiB): the file cannot reach 2 GB.
    size = int(r["stdout"].split()[4]) if r["stdout"].strip() else 0
    assert size <= 2**30 + 2**20, r


def test_infinite_cpu_loop_is_killed_by_the_watchdog():
    start = time.time()
    r = run("while :; do :; done", timeout=2)
    assert r["timed_out"]
    assert time.time() - start < 10


def test_process_ignoring_sigterm_is_killed():
    start = time.time()
    r = run("trap '' TERM INT; sleep 100", timeout=2)
    assert r["timed_out"]
    assert time.time() - start < 10


def test_cannot_kill_the_parent_or_see_host_processes():
    me = os.getpid()
    r = run(f"kill -9 {me}; kill -9 $PPID; ls /proc | grep -c '^[0-9]'; test -e /proc/{me} && echo SEEN")
    assert "SEEN" not in r["stdout"]
    os.kill(me, 0)  # still alive
    visible = int(r["stdout"].strip().splitlines()[-1])
    assert visible < 10


def test_cannot_ptrace_the_judge():
    # ptrace(PTRACE_ATTACH=16, pid) via the raw syscall (101 on x86-64) on the process that started
    # the sandbox: it lives outside the sandbox's pid namespace, so it cannot even be named.
    me = os.getpid()
    r = run(f"perl -e '$r = syscall(101, 16, {me}, 0, 0); print $r == 0 ? \"ATTACHED\" : \"denied: $!\"'")
    assert "ATTACHED" not in r["stdout"], r
    assert "No such process" in r["stdout"], r


def test_cannot_become_root():
    r = run("perl -e 'use POSIX; POSIX::setuid(0); print \"uid=$<\"'")
    assert "uid=65534" in r["stdout"], r


def test_no_stray_process_survives_the_run():
    tag = f"cuda-agent-stray-{os.getpid()}"
    run(f"(exec -a {tag} sleep 300 &) ; setsid sh -c 'exec -a {tag} sleep 300' & echo started")
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True).stdout
    assert left.strip() == "", f"survivors: {left}"


def test_gpu_device_nodes_hidden_without_a_lease():
    r = run("ls /dev")
    assert "nvidia" not in r["stdout"]
    assert set(r["stdout"].split()) <= {"console", "core", "fd", "full", "mqueue", "null", "ptmx",
                                        "pts", "random", "shm", "stderr", "stdin", "stdout", "tty",
                                        "urandom", "zero"}, r["stdout"]


def test_protected_file_change_is_detected_even_through_a_writable_parent(work):
    # The file is bound read-only; replacing it through the writable folder (rename over it) is the
    # one way left, and the after-run hash check reports it.
    protected = work / "SKILL.md"
    protected.write_text("rules")
    r = run(f"echo x > {protected}; echo new > {work}/tmp.md; mv {work}/tmp.md {protected}; echo done",
            "--writable", str(work), "--protect", str(protected))
    assert protected.read_text() == "rules" or r["tampered"] == [str(protected)], r


def test_help_after_the_double_dash_belongs_to_the_command():
    # `--help` after `--` is the sandboxed command's argument, not a request for cuda-agent's help.
    argv = [str(BIN), "sandbox", "run", "--json", "--timeout", "20", "--", "echo", "--help"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["stdout"] == "--help\n"
    proc = subprocess.run([str(BIN), "sandbox", "run", "--help", "--", "echo"], capture_output=True,
                          text=True, timeout=60, env=ENV)
    assert proc.returncode == 0 and "usage: cuda-agent <command>" in proc.stdout
