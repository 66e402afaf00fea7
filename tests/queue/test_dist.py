"""`cuda-agent worker` and `cuda-agent queue` against a real redis-server (each test starts its own on
a free loopback port and stops it): judgements through the queue and the faults of issue 20 — a
worker killed mid-job, a poison job, Redis killed and restarted, Redis unreachable at start, a
malformed job, SIGTERM during a job. CPU device; real judgements of examples/relu_scale.

redis-server is $CUDA_AGENT_REDIS_SERVER (scripts/bundle.sh's dist/redis/redis-server on the GPU
machine) or the one on PATH; redis-cli is $CUDA_AGENT_REDIS_CLI, else the one beside that
redis-server, else the one on PATH."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TASK = "tests/queue/relu_scale_small.py"
CANDIDATES = REPO / "examples" / "relu_scale" / "candidates"
# A judgement that is cheap but real: build, reference, candidate, comparison on two input sets.
FAST = ["--until", "verify", "--checks", "2"]
STREAM = "cuda-agent:jobs:cpu"
DEAD = "cuda-agent:dead:cpu"


def redis_tool(name):
    """The redis-server or redis-cli to run (see the module's docstring); None when there is none."""
    configured = os.environ.get("CUDA_AGENT_" + name.upper().replace("-", "_"))
    if configured:
        return configured
    server = os.environ.get("CUDA_AGENT_REDIS_SERVER")
    if server and name != "redis-server" and (Path(server).parent / name).is_file():
        return str(Path(server).parent / name)
    return shutil.which(name)


REDIS_SERVER = redis_tool("redis-server")
REDIS_CLI = redis_tool("redis-cli")


def binary_path():
    return Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")


@pytest.fixture(scope="module")
def binary():
    path = binary_path()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"binary not built: {path}")
    if REDIS_SERVER is None or REDIS_CLI is None:
        pytest.fail("redis-server and redis-cli are required (scripts/setup.sh installs them; on the GPU "
                    "machine set CUDA_AGENT_REDIS_SERVER=dist/redis/redis-server)")
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """A redis-server of this test: loopback only, its own folder, AOF (fsync always) on request."""

    def __init__(self, folder, aof=False):
        self.port = free_port()
        self.dir = Path(folder) / f"redis-{self.port}"
        self.dir.mkdir(parents=True)
        self.aof = aof
        self.proc = None
        self.start()

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self):
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
                "--save", "", "--logfile", str(self.dir / "redis.log")]
        if self.aof:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.try_cli("PING") == "PONG":
                return
            time.sleep(0.05)
        raise AssertionError(f"redis-server did not start on port {self.port}")

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def try_cli(self, *args):
        proc = subprocess.run([REDIS_CLI, "-p", str(self.port), *args], capture_output=True, text=True,
                              timeout=10)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def cli(self, *args):
        out = self.try_cli(*args)
        assert out is not None, f"redis-cli {args} failed"
        return out

@pytest.fixture
def redis(tmp_path):
    server = Redis(tmp_path)
    yield server
    server.kill()


def env():
    e = dict(os.environ)
    e.setdefault("CUDA_AGENT_CACHE_DIR", str(REPO / "build" / "test-cache"))
    return e


class Worker:
    def __init__(self, binary, url, log, *flags, name="w", consumers=1):
        self.log = Path(log)
        self.proc = subprocess.Popen(
            [str(binary), "worker", "--redis", url, "--device", "cpu", "--consumers", str(consumers), "--name",
             name, "--visibility", "2", "--heartbeat", "0.3", *flags],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "w"), env=env(), cwd=REPO)

    def text(self):
        return self.log.read_text()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def workers():
    started = []
    yield started
    for w in started:
        w.stop()


def submit(binary, url, candidate, *flags, task=TASK):
    return subprocess.Popen([str(binary), "queue", "submit", "--redis", url, "--task", str(task), "--candidate",
                             str(candidate), "--device", "cpu", "--json", *FAST, *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO)


def finish(proc, timeout=120):
    out, err = proc.communicate(timeout=timeout)
    assert out.strip(), f"no result (exit {proc.returncode}): {err[-2000:]}"
    return proc.returncode, json.loads(out), err


def status(binary, url):
    proc = subprocess.run([str(binary), "queue", "status", "--redis", url], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def dead_letters(binary, url):
    proc = subprocess.run([str(binary), "queue", "dead", "--redis", url, "--device", "cpu"], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def wait_for(what, predicate, timeout=60, every=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def consumer_judging(binary, url):
    for w in status(binary, url)["workers"]:
        for c in w["consumers"]:
            if c["state"] == "judging":
                return w, c
    return None


def sleepy_task(folder, seconds):
    """The small task whose get_init_inputs sleeps (reference and candidate jobs call it): a judgement
    that takes a while. Tasks may import time; candidates may not (a static rule)."""
    path = Path(folder) / f"sleepy_{seconds}.py"
    source = (REPO / TASK).read_text().replace("def get_init_inputs():\n",
                                               f"def get_init_inputs():\n    import time\n    time.sleep({seconds})\n", 1)
    assert "time.sleep" in source
    path.write_text(source)
    return path


def test_a_candidate_is_judged_through_the_queue_and_an_equal_job_shares_its_result(binary, redis, workers,
                                                                                      tmp_path):
    workers.append(Worker(binary, redis.url, tmp_path / "w.log"))
    code, result, err = finish(submit(binary, redis.url, CANDIDATES / "cpu_correct"))
    assert code == 0, err[-2000:]
    assert result["correct"] is True, result["reason"]
    queue = result["env"]["queue"]
    assert queue["consumer"] == "w/c0" and queue["deliveries"] == 1
    again = time.monotonic()
    code, second, _ = finish(submit(binary, redis.url, CANDIDATES / "cpu_correct"))
    assert time.monotonic() - again < 5
    assert second["env"]["queue"]["job_id"] == queue["job_id"]
    code, wrong, _ = finish(submit(binary, redis.url, CANDIDATES / "cpu_wrong_output"))
    assert code == 0 and wrong["correct"] is False and wrong["reward"] == -1
    assert wrong["env"]["queue"]["job_id"] != queue["job_id"]
    queues = status(binary, redis.url)["queues"]["cpu"]
    assert queues == {"waiting": 0, "pending": 0, "dead_letter": 0}
    # The worker's log says where each judgement's time went.
    judged = [line for line in (tmp_path / "w.log").read_text().splitlines() if " judged in " in line]
    stages = r"judged in [\d.]+ s \[[a-z ]+ [\d.]+ s(, [a-z ]+ [\d.]+ s)*\]: "
    assert judged and all(re.search(stages, line) for line in judged), judged


def test_a_job_of_a_worker_killed_mid_job_is_taken_over_and_judged_once(binary, redis, workers, tmp_path):
    a = Worker(binary, redis.url, tmp_path / "a.log", name="a")
    workers.append(a)
    sub = submit(binary, redis.url, CANDIDATES / "cpu_correct", task=sleepy_task(tmp_path, 3))
    wait_for("worker a to judge", lambda: consumer_judging(binary, redis.url), timeout=60)
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait()
    # Its judging process went with it (parent-death signal): nothing keeps judging for a.
    time.sleep(0.5)
    mine = f"-{a.proc.pid}-"
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        assert not ("__judge-job" in text and mine in text), f"orphaned judgement: {text}"
    workers.append(Worker(binary, redis.url, tmp_path / "b.log", name="b"))
    code, result, err = finish(sub)
    assert code == 0, err[-2000:]
    assert result["correct"] is True, result["reason"]
    assert result["env"]["queue"]["consumer"] == "b/c0"
    assert result["env"]["queue"]["deliveries"] == 2
    assert "took over entry" in workers[-1].text()
    assert len(redis.cli("KEYS", "cuda-agent:result:*").splitlines()) == 1
    assert status(binary, redis.url)["queues"]["cpu"] == {"waiting": 0, "pending": 0, "dead_letter": 0}


def test_a_poison_job_goes_to_the_dead_letter_stream_after_three_deliveries(binary, redis, workers, tmp_path):
    poison = sleepy_task(tmp_path, 300)
    w = Worker(binary, redis.url, tmp_path / "w.log", "--job-timeout", "8", "--visibility", "1",
               consumers=2)
    workers.append(w)
    bad = submit(binary, redis.url, CANDIDATES / "cpu_correct", task=poison)
    good = submit(binary, redis.url, CANDIDATES / "cpu_correct", "--checks", "3")
    code, result, err = finish(good, timeout=60)
    assert code == 0 and result["correct"] is True, err[-2000:]
    code, dead, _ = finish(bad, timeout=150)
    assert code == 4  # an internal error: the machinery, not the candidate, failed
    assert dead["outcome"] == "internal_error" and dead["error_kind"] == "dead_letter"
    assert "3 deliveries" in dead["reason"] and "timed out after" in dead["reason"], dead["reason"]
    letters = dead_letters(binary, redis.url)
    assert len(letters) == 1
    assert letters[0]["deliveries"] == 3 and letters[0]["job_id"] == dead["env"]["queue"]["job_id"]
    assert letters[0]["job"]["job_id"] == letters[0]["job_id"]  # the job itself, to look at again
    assert w.proc.poll() is None  # the worker survived
    assert status(binary, redis.url)["queues"]["cpu"] == {"waiting": 0, "pending": 0, "dead_letter": 1}


def test_no_accepted_job_is_lost_when_redis_is_killed_and_restarted(binary, workers, tmp_path):
    redis = Redis(tmp_path, aof=True)
    try:
        w = Worker(binary, redis.url, tmp_path / "w.log")
        workers.append(w)
        slow = sleepy_task(tmp_path, 2)
        subs = {name: submit(binary, redis.url, CANDIDATES / candidate, task=task) for name, candidate, task in
                [("slow", "cpu_correct", slow), ("wrong", "cpu_wrong_output", TASK),
                 ("plain", "cpu_plain_binding", TASK)]}
        wait_for("three accepted jobs", lambda: redis.try_cli("XLEN", STREAM) == "3", timeout=30, every=0.02)
        redis.kill()
        time.sleep(1.5)
        redis.start()  # same port and folder: the append-only file brings the stream back
        expected = {"slow": True, "wrong": False, "plain": True}
        for name, proc in subs.items():
            code, result, err = finish(proc, timeout=150)
            assert code == 0, err[-2000:]
            assert result["correct"] is expected[name], (name, result["reason"])
        assert "reconnected to Redis" in w.text()
        assert "retrying in" in w.text()
        assert len(redis.cli("KEYS", "cuda-agent:result:*").splitlines()) == 3
        assert status(binary, redis.url)["queues"]["cpu"] == {"waiting": 0, "pending": 0, "dead_letter": 0}
    finally:
        redis.kill()


def test_redis_unreachable_at_start_is_a_clear_error_not_a_hang(binary, tmp_path):
    url = f"redis://127.0.0.1:{free_port()}/0"
    for command in (["worker", "--redis", url, "--device", "cpu"],
                    ["queue", "submit", "--redis", url, "--task", TASK, "--candidate",
                     str(CANDIDATES / "cpu_correct"), "--device", "cpu"],
                    ["queue", "status", "--redis", url]):
        start = time.monotonic()
        proc = subprocess.run([str(binary), *command], capture_output=True, text=True, timeout=30, cwd=REPO)
        assert time.monotonic() - start < 10
        assert proc.returncode == 4, proc.stderr
        assert url in proc.stderr and "unreachable" in proc.stderr, proc.stderr
    proc = subprocess.run([str(binary), "worker", "--redis", "http://127.0.0.1:6379", "--device", "cpu"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "expected redis://HOST[:PORT][/DB]" in proc.stderr, proc.stderr


def test_a_malformed_job_is_dead_lettered_with_the_reason_and_the_worker_goes_on(binary, redis, workers,
                                                                                  tmp_path):
    w = Worker(binary, redis.url, tmp_path / "w.log")
    workers.append(w)
    redis.cli("XADD", STREAM, "*", "id", "0" * 24, "job", "{not json")
    redis.cli("XADD", STREAM, "*", "hello", "world")
    redis.cli("XADD", STREAM, "*", "id", "1" * 24, "job", json.dumps({"version": 99}))
    redis.cli("XADD", STREAM, "*", "id", "2" * 24, "job", json.dumps({"version": 1, "job_id": "2" * 24}))
    wait_for("four dead letters", lambda: redis.try_cli("XLEN", DEAD) == "4", timeout=30)
    reasons = [e["reason"] for e in dead_letters(binary, redis.url)]
    assert reasons[0].startswith("malformed job: ") and "JSON" in reasons[0], reasons[0]
    assert reasons[1] == "malformed job: the stream entry has no 'job' field (fields: hello)"
    assert "job version 99 is not supported" in reasons[2], reasons[2]
    assert "missing field 'task'" in reasons[3], reasons[3]
    # Whoever waited for those ids got the reason as a result.
    stored = json.loads(redis.cli("GET", "cuda-agent:result:" + "1" * 24))
    assert stored["result"]["error_kind"] == "dead_letter"
    assert w.proc.poll() is None
    code, result, err = finish(submit(binary, redis.url, CANDIDATES / "cpu_wrong_output"))
    assert code == 0 and result["correct"] is False, err[-2000:]


def test_sigterm_finishes_the_job_in_hand_then_exits_and_the_state_shows_it(binary, redis, workers, tmp_path):
    w = Worker(binary, redis.url, tmp_path / "w.log", name="t")
    workers.append(w)
    sub = submit(binary, redis.url, CANDIDATES / "cpu_correct", task=sleepy_task(tmp_path, 3))
    worker, consumer = wait_for("a judging consumer", lambda: consumer_judging(binary, redis.url), timeout=60)
    assert worker["name"] == "t" and worker["device"] == "cpu" and worker["pid"] == w.proc.pid
    assert worker["heartbeat_age_s"] < 3
    assert consumer["name"] == "t/c0" and len(consumer["job_id"]) == 24
    assert status(binary, redis.url)["queues"]["cpu"]["pending"] == 1
    w.proc.send_signal(signal.SIGTERM)
    code, result, err = finish(sub)
    assert code == 0 and result["correct"] is True, err[-2000:]
    assert w.proc.wait(timeout=30) == 0
    after = status(binary, redis.url)
    assert after["workers"] == []
    assert after["queues"]["cpu"] == {"waiting": 0, "pending": 0, "dead_letter": 0}


def test_a_cuda_worker_runs_its_consumers_per_gpu(binary, redis, tmp_path):
    # No GPU is needed to start one: consumers take a GPU only with a job. Two GPUs × two consumers.
    log = tmp_path / "cuda_worker.log"
    proc = subprocess.Popen([str(binary), "worker", "--redis", redis.url, "--device", "cuda", "--gpus", "0,1",
                             "--consumers", "2", "--name", "g", "--heartbeat", "0.3"],
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env(), cwd=REPO)
    try:
        worker = wait_for("the worker's heartbeat", lambda: next(
            (w for w in status(binary, redis.url)["workers"] if w.get("consumers")), None), timeout=30)
        names = sorted(c["name"] for c in worker["consumers"])
        assert names == ["g/gpu0", "g/gpu0.2", "g/gpu1", "g/gpu1.2"], names
        assert sorted(c["gpu"] for c in worker["consumers"]) == ["0", "0", "1", "1"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 0, log.read_text()


def test_queue_bench_writes_every_jobs_whole_result_when_asked(binary, redis, workers, tmp_path):
    workers.append(Worker(binary, redis.url, tmp_path / "w.log", consumers=2))
    results = tmp_path / "results.jsonl"
    bench = [str(binary), "queue", "bench", "--redis", redis.url, "--task", TASK, "--candidate",
             str(CANDIDATES / "cpu_correct"), "--device", "cpu", "--noop", "--count", "4", "--concurrency", "2",
             "--json"]
    proc = subprocess.run([*bench, "--results", str(results)], capture_output=True, text=True, timeout=120,
                          env=env(), cwd=REPO)
    assert json.loads(proc.stdout)["jobs"] == 4, proc.stderr[-2000:]
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == 4
    assert all(r["error_kind"] == "noop" for r in rows)
    assert len({r["env"]["queue"]["job_id"] for r in rows}) == 4  # every job's own result

    unwritable = tmp_path / "no-such-folder" / "results.jsonl"
    proc = subprocess.run([*bench, "--results", str(unwritable)], capture_output=True, text=True, timeout=60,
                          env=env(), cwd=REPO)
    assert proc.returncode != 0 and "--results: cannot write" in proc.stderr and str(unwritable) in proc.stderr
