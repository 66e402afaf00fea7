"""Tests of the torch.nn.functional blocker used during the candidate's forward."""

import pytest
import torch
import torch.nn.functional as F

from cuda_agent_harness.guards import block_functional


def test_functional_calls_raise_inside_and_work_after():
    original = F.relu
    with block_functional():
        with pytest.raises(RuntimeError, match=r"torch\.nn\.functional\.relu"):
            F.relu(torch.ones(2))
        with pytest.raises(RuntimeError, match=r"torch\.nn\.functional\.softmax"):
            torch.nn.functional.softmax(torch.ones(2), dim=0)
    assert F.relu is original
    assert torch.equal(F.relu(torch.tensor([-1.0, 1.0])), torch.tensor([0.0, 1.0]))


def test_nn_modules_that_use_functional_are_blocked():
    layer = torch.nn.Linear(2, 2)
    with block_functional():
        with pytest.raises(RuntimeError, match=r"torch\.nn\.functional\.linear"):
            layer(torch.ones(1, 2))
    assert layer(torch.ones(1, 2)).shape == (1, 2)


def test_restored_when_the_body_raises():
    original = F.gelu
    with pytest.raises(ValueError):
        with block_functional():
            raise ValueError("boom")
    assert F.gelu is original


def test_plain_torch_ops_still_work_inside():
    with block_functional():
        y = torch.relu(torch.tensor([-1.0, 2.0])) + torch.matmul(torch.eye(2), torch.ones(2))
    assert torch.equal(y, torch.tensor([1.0, 3.0]))
