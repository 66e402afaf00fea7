"""Worker processes for `cuda-agent synth`: the filter stages that run a program, in parallel.

The synth job's main process composes candidates and runs the static stages (they read only code);
each candidate that passes them goes to a worker process (from multiprocessing's fork server, see
WorkerPool) that runs the dynamic stages
(filters.run_dynamic_filters) on its device (worker i uses GPU i mod gpus). Timed measurements hold
one lock per device (an flock), so the runtime window sees one program at a time while compilation (inductor
on the CPUs) and the other stages overlap. A worker that dies (crash, out of memory) or overruns the
per-candidate timeout is killed and replaced; its candidate comes back as a crash. A worker retires
after `recycle` candidates (memory, inductor state and the CPU-time limit start afresh).

    pool = WorkerPool(workers=8, cfg=cfg, lock_dir=work_dir, gpus=1, timeout_s=300)
    pool.submit(index, candidate)
    for index, outcome in pool.wait():   # outcome: dict (stage, reason, log, eager_ms, compile_ms)
        ...
    pool.close()
"""

from __future__ import annotations

import fcntl
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
import traceback
from collections.abc import Iterator
from dataclasses import replace

from .filters import Candidate, FilterConfig, run_dynamic_filters


class DeviceLock:
    """An flock on a file, one per device: held around timed measurements. The kernel releases it when
    its holder dies, so a worker killed mid-measurement cannot block the others."""

    def __init__(self, path: str):
        self.path = path
        self.fd: int | None = None

    def __enter__(self):
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:  # always: __enter__ opened it
            fcntl.flock(self.fd, fcntl.LOCK_UN)


def _worker_main(conn, cfg: FilterConfig, device_index: int) -> None:
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # one process per candidate already
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if cfg.device == "cuda":
        import torch

        torch.cuda.set_device(device_index)
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        index, c = message
        try:
            stage, reason = run_dynamic_filters(c, cfg)
            outcome = {"stage": stage, "reason": reason, "log": c.log, "eager_ms": c.eager_ms,
                       "compile_ms": c.compile_ms}
        except BaseException as exc:  # noqa: BLE001 - reported as the candidate's crash
            text = f"{type(exc).__name__}: {exc}"
            outcome = {"stage": "crash", "reason": "the filter raised " + text[:300],
                       "log": {**c.log, "crash": text[:300]}, "eager_ms": c.eager_ms,
                       "compile_ms": c.compile_ms, "traceback": traceback.format_exc()[-2000:]}
        conn.send((index, outcome))


class _Worker:
    def __init__(self, ctx, cfg: FilterConfig, device_index: int):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, cfg, device_index), daemon=True)
        self.process.start()
        child.close()
        self.device_index = device_index
        self.index: int | None = None  # the candidate it works on
        self.started = 0.0
        self.done = 0

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


class WorkerPool:
    def __init__(self, workers: int, cfg: FilterConfig, lock_dir: str, gpus: int = 1, timeout_s: float = 0,
                 recycle: int = 40):
        # Workers come from a fork server of multiprocessing's own (a fresh interpreter that imported
        # torch and the filters, nothing else): a fork of this process could inherit OpenMP threads
        # (the catalog probe runs ops) and hang, or a device the driver was asked about.
        self.ctx = multiprocessing.get_context("forkserver")
        self.ctx.set_forkserver_preload(["torch", "cuda_agent_synth.filters"])
        gpus = max(1, gpus) if cfg.device == "cuda" else 1
        self.locks = [DeviceLock(os.path.join(lock_dir, f"timing-{i}.lock")) for i in range(gpus)]
        self.cfg = cfg
        self.timeout_s = timeout_s
        self.recycle = recycle
        self.slots: list[_Worker | None] = [None] * max(1, workers)
        self.gpus = gpus

    def _spawn(self, slot: int) -> _Worker:
        device_index = slot % self.gpus
        cfg = replace(self.cfg, timing_lock=self.locks[device_index])
        worker = _Worker(self.ctx, cfg, device_index)
        self.slots[slot] = worker
        return worker

    def idle(self) -> int:
        return sum(1 for w in self.slots if w is None or w.index is None)

    def busy(self) -> int:
        return len(self.slots) - self.idle()

    def submit(self, index: int, c: Candidate) -> None:
        for slot, w in enumerate(self.slots):
            if w is not None and w.index is None and w.done >= self.recycle:
                w.conn.send(None)
                w.kill()
                w = None
            if w is None:
                w = self._spawn(slot)
            if w.index is None:
                w.index, w.started = index, time.monotonic()
                w.conn.send((index, c))
                return
        raise RuntimeError("WorkerPool.submit without an idle worker")

    def wait(self, poll_s: float | None = None) -> Iterator[tuple[int, dict]]:
        """Blocks until at least one candidate finished (or died), or `poll_s` passed; yields each
        finished one."""
        busy = [(slot, w) for slot, w in enumerate(self.slots) if w is not None and w.index is not None]
        if not busy:
            return
        wait_s = poll_s
        if self.timeout_s > 0:
            until_timeout = max(0.0, min(w.started for _, w in busy) + self.timeout_s - time.monotonic())
            wait_s = until_timeout if wait_s is None else min(wait_s, until_timeout)
        ready = multiprocessing.connection.wait([w.conn for _, w in busy] + [w.process.sentinel for _, w in busy],
                                                timeout=wait_s)
        now = time.monotonic()
        for slot, w in busy:
            outcome = None
            if w.conn in ready:
                try:
                    got, outcome = w.conn.recv()
                    if got != w.index:
                        outcome = None
                except (EOFError, OSError):
                    outcome = None
            if outcome is not None:
                index, w.index = w.index, None
                assert index is not None  # busy workers only
                w.done += 1
                outcome["seconds"] = round(now - w.started, 3)
                yield index, outcome
                continue
            died = not w.process.is_alive() or w.conn in ready
            overran = self.timeout_s > 0 and now - w.started > self.timeout_s
            if died or overran:
                index = w.index
                assert index is not None  # busy workers only
                if died:
                    w.process.join(5)  # its pipe closes before it is reaped: wait for the exit status
                what = (f"overran the per-candidate timeout ({self.timeout_s:g} s)" if overran and not died
                        else f"the worker process died ({_describe_exit(w.process.exitcode)})")
                w.kill()
                self.slots[slot] = None
                yield index, {"stage": "crash", "reason": what, "log": {"crash": what},
                              "eager_ms": None, "compile_ms": None, "seconds": round(now - w.started, 3)}

    def close(self) -> None:
        for w in self.slots:
            if w is None:
                continue
            if w.index is None and w.process.is_alive():
                try:
                    w.conn.send(None)
                except OSError:
                    pass
                w.process.join(10)
            w.kill()
        self.slots = [None] * len(self.slots)


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"
