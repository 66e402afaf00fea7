"""A fake of the harness fork server (python/cuda_agent_harness/forkserver.py) for the C++ client's
tests (src/harness/fork_server_test.cc): the same command line and JSON-lines protocol, stdlib only,
and a far end that misbehaves on purpose. The tests install it as cuda_agent_harness/forkserver.py of a
temporary home; what it does for a run request depends on the job name:

  exit3        a real child writes to the stdout/stderr files and exits 3; "ended" when it has
  fragmented   as exit3, but "started" goes out a few bytes at a time and "ended" in one write
               together with the last piece of "started"
  hang         a real child sleeps; "ended" (with its signal) once something killed it
  die          "started", then half of an "ended" line, then the server process dies
  malformed    "started", then a line that is not JSON
  refuse       {"event": "error", ...} instead of "started"

Its pid goes to <home>/fake_fork_server.pid so that the tests can end it.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time


def send(conn, message):
    conn.sendall((json.dumps(message) + "\n").encode())


def run_child(request, argv):
    with open(request["stdout_path"], "wb") as out, open(request["stderr_path"], "wb") as err:
        return subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def ended(child):
    code = child.wait()
    return {"event": "ended", "exit_code": code if code >= 0 else None,
            "signal": -code if code < 0 else None, "jail": None, "seconds": 0.0}


def serve_run(conn, request):
    job = request["job"]
    if job == "refuse":
        send(conn, {"event": "error", "message": "unknown job refuse"})
        return
    if job in ("exit3", "fragmented"):
        child = run_child(request, ["sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"])
        started = (json.dumps({"event": "started", "pid": child.pid}) + "\n").encode()
        if job == "exit3":
            conn.sendall(started)
            send(conn, ended(child))
            return
        result = ended(child)
        head, last = started[:-3], started[-3:]
        for k in range(0, len(head), 3):
            conn.sendall(head[k:k + 3])
            time.sleep(0.005)
        conn.sendall(last + (json.dumps(result) + "\n").encode())
        return
    if job == "hang":
        child = run_child(request, ["sleep", "600"])
        send(conn, {"event": "started", "pid": child.pid})
        send(conn, ended(child))
        return
    if job == "die":
        send(conn, {"event": "started", "pid": 0})
        conn.sendall(b'{"event": "ended", "exit_')
        os._exit(1)
    if job == "malformed":
        send(conn, {"event": "started", "pid": 0})
        conn.sendall(b"this is not json\n")
        return
    send(conn, {"event": "error", "message": f"unknown job {job}"})


def serve(conn):
    with conn:
        line = b""
        while not line.endswith(b"\n"):
            chunk = conn.recv(4096)
            if not chunk:
                return
            line += chunk
        request = json.loads(line)
        if request.get("op") == "ping":
            send(conn, {"event": "pong", "pid": os.getpid(), "torch": None, "jail": None,
                        "cuda_fork": "ok"})
        elif request.get("op") == "run":
            serve_run(conn, request)
        else:
            send(conn, {"event": "error", "message": "unknown op"})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--socket", required=True)
    parser.add_argument("--jail-library")
    parser.add_argument("--idle-timeout", type=float, default=600.0)
    args = parser.parse_args()
    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(home, "fake_fork_server.pid"), "w") as f:
        f.write(str(os.getpid()))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(args.socket)
    listener.listen(16)
    listener.settimeout(args.idle_timeout)
    while True:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            return 0
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
