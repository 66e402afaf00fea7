"""hardware_queues.py: an untimed job's one-queue setting is read by the driver, then gone before candidate code."""

import ctypes
import os

import torch

from cuda_agent_harness.hardware_queues import QUEUES_VARIABLE, forget_queue_setting


def libc_getenv(name: str):
    getenv = ctypes.CDLL(None).getenv
    getenv.restype = ctypes.c_char_p
    return getenv(name.encode())


def test_on_cuda_the_context_is_made_then_the_setting_is_gone(monkeypatch):
    made = []
    monkeypatch.setenv(QUEUES_VARIABLE, "1")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: made.append(os.environ.get(QUEUES_VARIABLE)))
    forget_queue_setting("cuda")
    assert made == ["1"]  # the context was made while the driver could still read it
    assert QUEUES_VARIABLE not in os.environ
    assert libc_getenv(QUEUES_VARIABLE) is None  # what native candidate code would read


def test_on_the_cpu_nothing_changes(monkeypatch):
    monkeypatch.setenv(QUEUES_VARIABLE, "1")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: (_ for _ in ()).throw(AssertionError("no context")))
    forget_queue_setting("cpu")
    assert os.environ[QUEUES_VARIABLE] == "1"


def test_without_the_setting_no_context_is_made(monkeypatch):
    monkeypatch.delenv(QUEUES_VARIABLE, raising=False)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: (_ for _ in ()).throw(AssertionError("no context")))
    forget_queue_setting("cuda")
    assert QUEUES_VARIABLE not in os.environ
