"""The fork server: one long-lived process that imports torch and the harness once, then forks one
child per harness job, so a job costs its work and a CUDA initialisation, not an interpreter start.

    python3 -m cuda_agent_harness.forkserver --socket PATH [--jail-library LIB] [--idle-timeout S]

Its socket protocol (ping, run, standbys, claim, release): docs/harness-protocol.md, "Fork server".
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import selectors
import shutil
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any, cast

JAIL_SETUP_EXIT = 125  # src/sandbox/jail.h kJailSetupExit
MAX_REQUEST_BYTES = 1 << 20
MAX_FD = 1 << 20


class Job:
    """One running child and the connection that asked for it (None: a standby nobody claimed yet)."""

    def __init__(self, pid: int, conn: socket.socket | None, ready_fd: int, standby: dict[str, Any] | None = None):
        self.pid = pid
        self.conn = conn
        self.ready_fd = ready_fd
        self.ready = b""
        self.start = time.monotonic()
        self.standby = standby  # the request's "standby" object while unclaimed
        self.offer = standby  # the same, kept while claimed: a release puts the job back under it
        self.released = b""  # what its claiming client sent so far
        self.ending = False  # killed for waiting too long: no longer handed out
        self.client_gone = False  # its client went away: killed, and cleaned up as offered


def _standby_fields(request: dict[str, Any]) -> dict[str, Any] | None:
    """The request's "standby" object, checked; None when absent. Raises ValueError when malformed."""
    standby = request.get("standby")
    if standby is None:
        return None
    if not isinstance(standby, dict) or not isinstance(standby.get("key"), str) or not standby["key"]:
        raise ValueError("standby: needs a non-empty string 'key'")
    cleanup = standby.get("cleanup", [])
    if not isinstance(cleanup, list) or not all(isinstance(p, str) and os.path.isabs(p) for p in cleanup):
        raise ValueError("standby: 'cleanup' must be a list of absolute paths")
    waiting = standby.get("max_waiting", 1)
    if not isinstance(waiting, int) or isinstance(waiting, bool) or waiting < 1:
        raise ValueError("standby: 'max_waiting' must be a positive integer")
    record = standby.get("record", {})
    if not isinstance(record, dict):
        raise ValueError("standby: 'record' must be a JSON object")
    idle = standby.get("idle_s")
    if idle is not None and (not isinstance(idle, (int, float)) or isinstance(idle, bool) or idle <= 0):
        raise ValueError("standby: 'idle_s' must be a positive number")
    group = standby.get("group")
    group_max = standby.get("group_max", 1)
    if group is not None and (not isinstance(group, str) or not group or not isinstance(group_max, int)
                              or isinstance(group_max, bool) or group_max < 1):
        raise ValueError("standby: 'group' must be a non-empty string and 'group_max' a positive integer")
    return {"key": standby["key"], "cleanup": cleanup, "max_waiting": waiting, "record": record, "idle_s": idle,
            "group": group, "group_max": group_max}


def _clean_up(paths: list[str]) -> None:
    """Removes what an unclaimed standby leaves: its folders, and its cgroup folders (rmdir only)."""
    for path in paths:
        try:
            if path.startswith("/sys/fs/cgroup/"):
                os.rmdir(path)
            else:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def _preload() -> dict[str, Any]:
    """Imports what the jobs need, without touching CUDA: torch, the profiler, the jobs. Not
    torch._dynamo/_inductor: on a GPU machine their import asks the CUDA driver about devices, after
    which no forked child may use CUDA (a compile baseline imports them itself)."""
    import torch
    import torch.nn
    import torch.profiler

    from . import runner
    for module in runner.JOB_MODULES.values():
        __import__(module)
    return {"torch": torch.__version__, "cuda_initialized": bool(torch.cuda.is_initialized())}


def _load_jail(path: str | None) -> Any:
    if not path:
        return None
    lib = ctypes.CDLL(path)
    lib.cuda_agent_enter_jail.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.cuda_agent_enter_jail.restype = ctypes.c_int
    return lib


def _open_output(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)


def _run_child(request: dict[str, Any], jail_lib: Any, ready_w: int) -> None:
    """The forked child: never returns."""
    code = 1
    try:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        out = _open_output(request["stdout_path"])
        err = _open_output(request["stderr_path"])
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        # Nothing of the server's (its socket, other jobs' connections) stays open in the job.
        os.closerange(3, ready_w)
        os.closerange(ready_w + 1, MAX_FD)
        env = request.get("env")
        if isinstance(env, dict):
            os.environ.clear()
            os.environ.update({str(k): str(v) for k, v in env.items()})
        jail = request.get("jail")
        if jail is not None:
            if jail_lib is None:
                os.write(ready_w, b"error: no jail library loaded\n")
                os._exit(JAIL_SETUP_EXIT)
            jail = dict(jail)
            jail["cwd"] = request.get("cwd") or "/"
            message = ctypes.create_string_buffer(2048)
            if jail_lib.cuda_agent_enter_jail(json.dumps(jail).encode(), ready_w, message, 2048) != 0:
                text = message.value.decode(errors="replace")
                os.write(ready_w, f"error: {text}\n".encode())
                os.write(2, f"cuda-agent jail: {text}\n".encode())
                os._exit(JAIL_SETUP_EXIT)
            # In the jail: only descriptors 0-2 are left (ready_w went with the others).
        else:
            os.write(ready_w, b"ok\n")
            os.close(ready_w)
            if request.get("cwd"):
                os.chdir(request["cwd"])
        code = _run_job(request)
    except BaseException:  # noqa: BLE001 - the child must end here whatever happens
        try:
            traceback.print_exc()
        except Exception:  # noqa: BLE001
            pass
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - candidate code may have replaced the streams
            pass
    os._exit(code)


def _run_job(request: dict[str, Any]) -> int:
    """The job, as `python3 -m cuda_agent_harness JOB --spec SPEC` would run it."""
    from .__main__ import JOBS_RUNNING_CANDIDATE_CODE
    from .runner import JOB_MODULES, run_job
    from .spec import SpecError, read_spec

    job = request.get("job")
    spec_path = request.get("spec_path")
    if job not in JOB_MODULES or not isinstance(spec_path, str):
        print(f"cuda_agent_harness: unknown job {job!r} or no spec path", file=sys.stderr)
        return 2
    sys.argv = ["cuda_agent_harness", job]
    try:
        spec = read_spec(spec_path)
    except SpecError as exc:
        print(f"cuda_agent_harness: {exc}", file=sys.stderr)
        return 2
    if job in JOBS_RUNNING_CANDIDATE_CODE:
        try:
            os.unlink(spec_path)  # it holds secrets candidate code must not read
        except OSError:
            pass
    run_job(job, spec)
    return 0


def _probe_cuda_fork() -> str:
    """Whether a forked child may still initialise CUDA: "ok", or "poisoned" when something this
    process imported initialised the driver (torch then refuses CUDA in every child)."""
    import torch
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        bad = bool(torch.cuda._is_in_bad_fork())
        os.write(w, b"poisoned" if bad else b"ok")
        os._exit(0)
    os.close(w)
    answer = os.read(r, 64).decode() or "unknown"
    os.close(r)
    os.waitpid(pid, 0)
    return answer


def _probe_jail(jail_lib: Any) -> str | None:
    """Enters a trivial jail in a child: "ok", or why the jail does not work here."""
    if jail_lib is None:
        return None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        message = ctypes.create_string_buffer(2048)
        spec = json.dumps({"cwd": "/"}).encode()
        if jail_lib.cuda_agent_enter_jail(spec, w, message, 2048) != 0:
            os.write(w, f"error: {message.value.decode(errors='replace')}\n".encode())
            os._exit(JAIL_SETUP_EXIT)
        os._exit(0 if os.getuid() == 65534 else 3)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    text = data.decode(errors="replace").strip()
    if os.waitstatus_to_exitcode(status) == 0 and text.startswith("ok"):
        return "ok"
    return "unavailable: " + (text.removeprefix("error: ") or f"exit status {os.waitstatus_to_exitcode(status)}")


class Server:
    def __init__(self, path: str, jail_lib: Any, idle_timeout: float, info: dict[str, Any]) -> None:
        self.path = path
        self.jail_lib = jail_lib
        self.idle_timeout = idle_timeout
        self.info = info
        self.jobs: dict[int, Job] = {}
        self.pending: dict[socket.socket, bytes] = {}
        self.sel = selectors.DefaultSelector()
        self.last_activity = time.monotonic()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            self.listener.bind(path)
        finally:
            os.umask(old_umask)
        self.path_inode = os.stat(path).st_ino
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, "accept")
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._stop)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.running = True

    def _stop(self, *_: Any) -> None:
        self.running = False

    def serve(self) -> None:
        while self.running:
            for key, _ in self.sel.select(timeout=0.5):
                kind = key.data
                if kind == "accept":
                    self._accept()
                elif kind == "wake":
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                elif isinstance(kind, tuple) and kind[0] == "request":
                    self._read_request(cast(socket.socket, key.fileobj))  # requests come on sockets
                elif isinstance(kind, tuple) and kind[0] == "job":
                    self._read_job_conn(kind[1])
                elif isinstance(kind, tuple) and kind[0] == "ready":
                    self._read_ready(kind[1])
            self._reap()
            self._end_idle_standbys()
            if self.jobs or self.pending:
                self.last_activity = time.monotonic()
            elif time.monotonic() - self.last_activity > self.idle_timeout:
                break
        self._shutdown()

    def _shutdown(self) -> None:
        for job in list(self.jobs.values()):
            try:
                os.kill(job.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if job.standby is not None:
                try:
                    os.waitpid(job.pid, 0)
                except ChildProcessError:
                    pass
                _clean_up(job.standby["cleanup"])
        try:
            if os.stat(self.path).st_ino == self.path_inode:  # not a successor's socket
                os.unlink(self.path)
        except OSError:
            pass

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        self.pending[conn] = b""
        self.sel.register(conn, selectors.EVENT_READ, ("request", None))

    def _drop(self, conn: socket.socket) -> None:
        self.pending.pop(conn, None)
        try:
            self.sel.unregister(conn)
        except (KeyError, ValueError):
            pass
        conn.close()

    @staticmethod
    def _send(conn: socket.socket, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        conn.setblocking(True)
        try:
            conn.sendall(data)
        except OSError:
            pass
        finally:
            conn.setblocking(False)

    def _read_request(self, conn: socket.socket) -> None:
        try:
            chunk = conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(conn)
            return
        buffer = self.pending[conn] + chunk
        if b"\n" not in buffer:
            if len(buffer) > MAX_REQUEST_BYTES:
                self._send(conn, {"event": "error", "message": "request too long"})
                self._drop(conn)
            else:
                self.pending[conn] = buffer
            return
        line = buffer.split(b"\n", 1)[0]
        self.pending.pop(conn, None)
        self.sel.unregister(conn)
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            self._send(conn, {"event": "error", "message": f"malformed request: {exc}"})
            conn.close()
            return
        op = request.get("op")
        if op == "ping":
            self._send(conn, {"event": "pong", "pid": os.getpid(), "threads": threading.active_count(),
                              "os_threads": len(os.listdir("/proc/self/task")), **self.info})
            conn.close()
        elif op == "run":
            self._start(conn, request)
        elif op == "claim":
            self._claim(conn, request)
        else:
            self._send(conn, {"event": "error", "message": f"unknown op {op!r}"})
            conn.close()

    def _start(self, conn: socket.socket, request: dict[str, Any]) -> None:
        for key in ("job", "spec_path", "stdout_path", "stderr_path"):
            if not isinstance(request.get(key), str):
                self._send(conn, {"event": "error", "message": f"request: '{key}' missing"})
                conn.close()
                return
        try:
            standby = _standby_fields(request)
        except ValueError as exc:
            self._send(conn, {"event": "error", "message": str(exc)})
            conn.close()
            return
        if standby is not None and self._waiting(standby["key"]) >= standby["max_waiting"]:
            self._send(conn, {"event": "declined",
                              "message": f"{standby['max_waiting']} standby job(s) wait under this key already"})
            conn.close()
            return
        if standby is not None:
            self._make_room(standby)
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            _run_child(request, self.jail_lib, ready_w)
        os.close(ready_w)
        job = Job(pid, None if standby else conn, ready_r, standby)
        self.jobs[pid] = job
        os.set_blocking(ready_r, False)
        self.sel.register(ready_r, selectors.EVENT_READ, ("ready", pid))
        self._send(conn, {"event": "started", "pid": pid})
        if standby is not None:
            self._send(conn, {"event": "waiting"})
            conn.close()
        else:
            self.sel.register(conn, selectors.EVENT_READ, ("job", pid))

    def _waiting(self, key: str) -> int:
        return sum(1 for job in self.jobs.values()
                   if job.standby is not None and not job.ending and job.standby["key"] == key)

    def _claim(self, conn: socket.socket, request: dict[str, Any]) -> None:
        """Hands the oldest standby waiting under the request's key to this client."""
        key = request.get("key")
        waiting = [job for job in self.jobs.values()
                   if job.standby is not None and not job.ending and job.standby["key"] == key]
        if not waiting:
            self._send(conn, {"event": "none"})
            conn.close()
            return
        job = min(waiting, key=lambda j: j.start)
        assert job.standby is not None  # waiting holds standbys only
        record = job.standby["record"]
        job.standby = None
        job.conn = conn
        self.sel.register(conn, selectors.EVENT_READ, ("job", job.pid))
        self._send(conn, {"event": "claimed", "pid": job.pid, "waited_seconds": time.monotonic() - job.start,
                          "record": record})

    def _read_ready(self, pid: int) -> None:
        job = self.jobs.get(pid)
        if job is None:
            return
        try:
            chunk = os.read(job.ready_fd, 4096)
        except BlockingIOError:
            return
        if chunk:
            job.ready += chunk
        else:
            self.sel.unregister(job.ready_fd)
            os.close(job.ready_fd)
            job.ready_fd = -1

    def _read_job_conn(self, pid: int) -> None:
        """Data or EOF from a client whose job runs: EOF (the client went away) kills the job; a
        "release" line from the client that claimed a standby puts it back under its key."""
        job = self.jobs.get(pid)
        if job is None:
            return
        conn = job.conn
        assert conn is not None  # registered for its client's connection
        try:
            chunk = conn.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            job.client_gone = True
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return
        job.released = (job.released + chunk)[-MAX_REQUEST_BYTES:]
        while b"\n" in job.released:
            line, job.released = job.released.split(b"\n", 1)
            try:
                op = json.loads(line).get("op")
            except (ValueError, AttributeError):
                op = None
            if op == "release":
                self._release(job)
                return
            self._send(conn, {"event": "error", "message": f"a running job's client may only send "
                                                               f"release, not {line[:80]!r}"})

    def _release(self, job: Job) -> None:
        """Puts a claimed standby back under its key for the next claim (see the protocol)."""
        conn = job.conn
        assert conn is not None  # the claiming client's connection
        offer = job.offer
        if offer is None or self._waiting(offer["key"]) >= offer["max_waiting"]:
            why = "not a standby" if offer is None else f"{offer['max_waiting']} wait under its key already"
            self._send(conn, {"event": "declined", "message": why})
            return
        self._make_room(offer)
        job.conn = None
        try:
            self.sel.unregister(conn)
        except (KeyError, ValueError):
            pass
        job.standby = offer
        job.start = time.monotonic()
        self._send(conn, {"event": "released"})
        conn.close()

    def _make_room(self, standby: dict[str, Any]) -> None:
        """Before a standby of a group starts waiting: ends the group's longest-waiting standbys until
        fewer than "group_max" wait (what they hold — a GPU's memory, the host's — is the group's)."""
        group = standby.get("group")
        if group is None:
            return
        waiting = sorted((job for job in self.jobs.values()
                          if job.standby is not None and not job.ending and job.standby.get("group") == group),
                         key=lambda j: j.start)
        for job in waiting[:max(0, len(waiting) - standby["group_max"] + 1)]:
            job.ending = True
            try:
                os.kill(job.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _end_idle_standbys(self) -> None:
        """Kills each standby that has waited unclaimed longer than its "idle_s" (reaped and cleaned up
        as any unclaimed standby)."""
        now = time.monotonic()
        for job in self.jobs.values():
            standby = job.standby
            if standby is not None and standby.get("idle_s") and now - job.start > standby["idle_s"]:
                job.ending = True
                try:
                    os.kill(job.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _reap(self) -> None:
        while self.jobs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            job = self.jobs.pop(pid, None)
            if job is None:
                continue
            if job.ready_fd >= 0:
                try:
                    while chunk := os.read(job.ready_fd, 4096):
                        job.ready += chunk
                except (BlockingIOError, OSError):
                    pass
                self.sel.unregister(job.ready_fd)
                os.close(job.ready_fd)
            if job.conn is None:  # a standby nobody claimed: it gave up waiting, or was killed
                if job.standby is not None:
                    _clean_up(job.standby["cleanup"])
                continue
            if job.client_gone and job.offer is not None:
                _clean_up(job.offer["cleanup"])  # a claimed standby whose client died without cleaning up
            text = job.ready.decode(errors="replace").strip().splitlines()
            message = {"event": "ended", "seconds": time.monotonic() - job.start,
                       "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                       "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                       "jail": text[0] if text else None}
            try:
                self.sel.unregister(job.conn)
            except (KeyError, ValueError):
                pass
            self._send(job.conn, message)
            job.conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m cuda_agent_harness.forkserver",
                                     description="Serve harness jobs by forking a warm interpreter.")
    parser.add_argument("--socket", required=True, help="Unix socket path to listen on")
    parser.add_argument("--jail-library", help="libcuda_agent_jail.so (without it jobs run unjailed)")
    parser.add_argument("--idle-timeout", type=float, default=600.0,
                        help="seconds without a connection or a job before exiting")
    args = parser.parse_args(argv)
    sys.dont_write_bytecode = True
    info = _preload()
    jail_lib = _load_jail(args.jail_library)
    info["jail"] = _probe_jail(jail_lib)
    info["cuda_fork"] = _probe_cuda_fork()
    info["os_threads_at_start"] = len(os.listdir("/proc/self/task"))
    try:
        server = Server(args.socket, jail_lib, args.idle_timeout, info)
    except OSError as exc:
        print(f"forkserver: cannot listen on {args.socket}: {exc}", file=sys.stderr)
        return 3
    print(json.dumps({"event": "listening", "socket": args.socket, **info}), flush=True)
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
