"""`serve --redis` and `bench --redis` (issue 20: one scheduler interface, two implementations): the
same judgements through the Redis queue as in the process, with a real redis-server on a free port
and real `cuda-agent worker --device cpu` processes.

- an evaluation through `serve --redis` gives the reward of the in-process server, and /v1/health
  lists the worker with a fresh heartbeat;
- the server's bounded queue follows the live consumers: none → one judgement waits, the next is a
  429; two consumers → two at once;
- a session's grade through `serve --redis` is judged by the worker;
- `serve --redis` with nothing listening at the URL exits 4 within seconds, naming the URL;
- `bench --redis` over a two-task suite gives the records of `bench` without it.

Judgements run without baselines, so the reward of a correct candidate is 1 whatever the timings.
"""

import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_dist import REPO, Redis, Worker, binary, env, free_port, redis, wait_for, workers  # noqa: E402,F401

TASK = REPO / "examples" / "relu_scale" / "model.py"
CANDIDATES = REPO / "examples" / "relu_scale" / "candidates"
JUDGE = ["--baselines", "none", "--checks", "2", "--warmup", "1", "--iters", "3"]


def plain_env():
    """The tests' environment without a CUDA_AGENT_REDIS that would send the in-process runs to a queue."""
    e = env()
    e.pop("CUDA_AGENT_REDIS", None)
    e.pop("CUDA_AGENT_TOKEN", None)
    return e


class Serve:
    def __init__(self, binary, state_dir, *flags):
        self.proc = subprocess.Popen(
            [str(binary), "serve", "--port", "0", "--device", "cpu", "--state-dir", str(state_dir),
             "--shutdown-grace", "5", *JUDGE, *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=plain_env(), cwd=REPO)
        line = self.proc.stdout.readline()
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+) \(state [^,]+, judge ([^,]+),", line)
        if not match:
            self.proc.kill()
            raise AssertionError(f"no URL line: {line!r}; stderr: {self.proc.stderr.read()[-2000:]}")
        self.port = int(match.group(1))
        self.judge = match.group(2)

    def request(self, method, path, body=None, headers_out=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers={"Content-Type": "application/json"} if body is not None else {})
        resp = conn.getresponse()
        answer = json.loads(resp.read().decode())
        if headers_out is not None:
            headers_out.update(resp.getheaders())
        conn.close()
        return resp.status, answer

    def ok(self, method, path, body=None, status=200):
        code, answer = self.request(method, path, body)
        assert code == status, (code, answer)
        return answer

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def serves():
    started = []

    def start(*args):
        s = Serve(*args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def candidate_files(name):
    folder = CANDIDATES / name
    return {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}


def test_an_evaluation_through_serve_redis_matches_the_in_process_server_and_health_lists_the_worker(
        binary, redis, workers, serves, tmp_path):
    workers.append(Worker(binary, redis.url, tmp_path / "w.log", name="w1"))
    remote = serves(binary, tmp_path / "remote", "--redis", redis.url)
    local = serves(binary, tmp_path / "local")
    assert remote.judge == redis.url and local.judge == "in-process"
    body = {"task": str(TASK), "files": candidate_files("cpu_correct"), "device": "cpu"}
    answers = {}

    def evaluate(name, server):
        answers[name] = server.ok("POST", "/v1/evaluate", body)

    threads = [threading.Thread(target=evaluate, args=(n, s)) for n, s in (("remote", remote), ("local", local))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=400)
    got, want = answers["remote"], answers["local"]
    assert want["result"]["correct"] is True, want["result"]["reason"]
    assert got["reward"] == want["reward"] == 1, (got["result"]["reason"], want["result"]["reason"])
    for key in ("outcome", "stage", "correct", "error_kind"):
        assert got["result"].get(key) == want["result"].get(key), key
    assert got["result"]["candidate"]["hash"] == want["result"]["candidate"]["hash"]
    # The remote one was judged by the worker, the local one here.
    assert got["result"]["env"]["queue"]["consumer"] == "w1/c0"
    assert "queue" not in want["result"]["env"]

    def worker_in_health():
        health = remote.ok("GET", "/v1/health")
        mine = [w for w in health["workers"] if w.get("name") == "w1"]
        if mine and mine[0]["consumers"] and mine[0]["consumers"][0]["jobs_done"] >= 1:
            return health, mine[0]
        return None

    health, worker = wait_for("the worker's judgement in /v1/health", worker_in_health, timeout=15, every=0.3)
    assert health["judge"] == redis.url
    assert worker["device"] == "cpu" and worker["state"] == "running"
    assert 0 <= worker["heartbeat_age_s"] < 5
    assert health["queues"]["cpu"] == {"waiting": 0, "pending": 0, "dead_letter": 0}
    # One consumer, so one judgement of the CPU at a time (the 429 bound is that plus the queue).
    cpu = [d for d in health["devices"] if d["device"] == "cpu"]
    assert cpu and cpu[0]["workers"] == 1
    assert local.ok("GET", "/v1/health")["workers"] == []
    # The OpenAPI document describes every field health answers, the workers' included.
    schemas = remote.ok("GET", "/v1/openapi.json")["components"]["schemas"]
    assert set(health) <= set(schemas["Health"]["properties"]), set(health) - set(schemas["Health"]["properties"])
    assert set(worker) <= set(schemas["Worker"]["properties"])
    assert set(worker["consumers"][0]) <= set(schemas["Worker"]["properties"]["consumers"]["items"]["properties"])


def test_a_session_graded_through_serve_redis_is_judged_by_the_worker(binary, redis, workers, serves, tmp_path):
    workers.append(Worker(binary, redis.url, tmp_path / "w.log", name="grader"))
    server = serves(binary, tmp_path / "state", "--redis", redis.url)
    opened = server.ok("POST", "/v1/sessions", {"task": str(TASK)}, status=201)
    sid = opened["session_id"]
    for i, (name, content) in enumerate(sorted(candidate_files("cpu_correct").items())):
        answer = server.ok("POST", f"/v1/sessions/{sid}/calls",
                           {"call_id": f"w{i}", "tool": "Write", "arguments": {"file_path": name, "content": content}})
        assert answer["observation"]["is_error"] is False, answer
    grade = server.ok("POST", f"/v1/sessions/{sid}/grade", {})
    assert grade["result"]["correct"] is True, grade["result"]["reason"]
    assert grade["reward"] == 1
    assert grade["result"]["env"]["queue"]["consumer"] == "grader/c0"
    assert server.ok("GET", f"/v1/sessions/{sid}")["status"] == "graded"


def cpu_workers(server):
    cpu = [d for d in server.ok("GET", "/v1/health")["devices"] if d["device"] == "cpu"]
    return cpu[0]["workers"] if cpu else None


def test_serve_redis_bounds_its_queue_by_the_live_consumers(binary, redis, workers, serves, tmp_path):
    """No worker: one judgement waits in the stream, the next is a 429 at once (not a pile-up in
    Redis). Two consumers come: within a heartbeat reading the device takes two, and the jobs end."""
    server = serves(binary, tmp_path / "state", "--redis", redis.url, "--queue-per-device", "0")
    assert cpu_workers(server) == 1
    task = str(REPO / "tests" / "queue" / "relu_scale_small.py")
    body = {"task": task, "files": candidate_files("cpu_correct"), "device": "cpu", "wait": False}
    first = server.ok("POST", "/v1/evaluate", body, status=202)["job_id"]
    headers = {}
    code, answer = server.request("POST", "/v1/evaluate", body, headers_out=headers)
    assert code == 429 and answer["error"]["code"] == "busy", answer
    assert int(headers["Retry-After"]) >= 1
    assert redis.cli("XLEN", "cuda-agent:jobs:cpu") == "1"  # only the admitted one reached Redis

    workers.append(Worker(binary, redis.url, tmp_path / "w.log", name="late", consumers=2))
    wait_for("two CPU consumers in /v1/health", lambda: cpu_workers(server) == 2, timeout=15, every=0.2)
    wrong = dict(body, files=candidate_files("cpu_wrong_output"))
    second = server.ok("POST", "/v1/evaluate", wrong, status=202)["job_id"]
    done = {}
    for job in (first, second):
        done[job] = wait_for(f"job {job}", lambda job=job: (lambda j: j if j["status"] == "done" else None)(
            server.ok("GET", f"/v1/jobs/{job}")), timeout=300, every=0.3)
    assert done[first]["reward"] == 1 and done[second]["reward"] == -1
    assert done[first]["result"]["env"]["queue"]["worker"] == "late"


def test_serve_redis_with_nothing_at_the_url_exits_4_at_once_naming_it(binary, tmp_path):
    url = f"redis://127.0.0.1:{free_port()}/0"
    started = time.monotonic()
    proc = subprocess.run([str(binary), "serve", "--port", "0", "--device", "cpu", "--state-dir",
                           str(tmp_path / "state"), "--redis", url], capture_output=True, text=True,
                          timeout=60, env=plain_env(), cwd=REPO)
    assert time.monotonic() - started < 15
    assert proc.returncode == 4, proc.stderr
    assert url in proc.stderr and "listening" not in proc.stdout
    bad = subprocess.run([str(binary), "serve", "--port", "0", "--state-dir", str(tmp_path / "state"),
                          "--redis", "http://127.0.0.1:1/"], capture_output=True, text=True, timeout=60,
                         env=plain_env(), cwd=REPO)
    assert bad.returncode == 2 and "--redis" in bad.stderr and "redis://" in bad.stderr


def start_bench(binary, suite, store, *flags):
    return subprocess.Popen([str(binary), "bench", str(suite / "suite"), "--solver", f"solutions:{suite / 'solutions'}",
                             "--store", str(store), "--device", "cpu", "--jobs", "2", "--json", *JUDGE, *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=plain_env(), cwd=REPO)


def bench_report(proc):
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out)


def test_bench_redis_gives_the_records_of_bench_in_process(binary, redis, workers, tmp_path):
    suite = tmp_path
    (suite / "suite").mkdir()
    source = (REPO / "tests" / "queue" / "relu_scale_small.py").read_text()
    (suite / "suite" / "relu_small.py").write_text(source)
    (suite / "suite" / "relu_small_wrong.py").write_text(source + "\n# judged with a wrong candidate\n")
    for name, candidate in (("relu_small", "cpu_correct"), ("relu_small_wrong", "cpu_wrong_output")):
        shutil.copytree(CANDIDATES / candidate, suite / "solutions" / name)
    workers.append(Worker(binary, redis.url, tmp_path / "w.log", name="bencher", consumers=2))
    # Both at once: the in-process run judges here, the remote one waits on the worker.
    remote_run = start_bench(binary, suite, tmp_path / "remote.sqlite", "--redis", redis.url)
    local_run = start_bench(binary, suite, tmp_path / "local.sqlite")
    remote, local = bench_report(remote_run), bench_report(local_run)
    assert remote["counts"] == local["counts"] == {
        "tasks": 2, "correct": 1, "failed": 1, "missing": 0, "task_error": 0, "internal_error": 0, "pending": 0}
    by_name = {t["task"]["name"]: t for t in local["tasks"]}
    assert sorted(by_name) == ["relu_small", "relu_small_wrong"]
    for got in remote["tasks"]:
        want = by_name[got["task"]["name"]]
        for key in ("status", "ok", "reward", "stage", "error_kind", "candidate"):
            assert got.get(key) == want.get(key), (key, got.get(key), want.get(key))
    assert {t["task"]["name"]: t["reward"] for t in remote["tasks"]} == {"relu_small": 1, "relu_small_wrong": -1}

    def jobs_done():
        states = json.loads(subprocess.run([str(binary), "queue", "status", "--redis", redis.url],
                                           capture_output=True, text=True, timeout=30).stdout)
        return sum(c["jobs_done"] for w in states["workers"] for c in w["consumers"])

    # Both of the remote run's judgements ran on the worker (its state hash follows within a heartbeat).
    wait_for("two judgements in the worker's state", lambda: jobs_done() == 2, timeout=10, every=0.2)
