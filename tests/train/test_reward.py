"""The single-turn reward function (cuda_agent_verl.reward) and the answer format it reads: files
from fenced blocks, the request to /v1/evaluate (fake server), the schedules, and a null reward
(no verdict) kept apart from −1."""

import asyncio

import pytest

from cuda_agent_verl.answer import extract_files
from cuda_agent_verl.reward import compute_score, schedule_reward
from fakes import FakeEnvServer

ANSWER = """I will fuse both ops.

```cpp kernels/relu_scale.cpp
extern "C" void f() {}
```

```cpp kernels/relu_scale_binding.cpp
// binding
```

```python model_new.py
class ModelNew: pass
```

```python model_new.py
class ModelNew:  # the second version wins
    pass
```

```python ../model.py
bad
```

```text
no file
```
"""


def test_extract_files():
    files, notes = extract_files(ANSWER)
    assert sorted(files) == ["kernels/relu_scale.cpp", "kernels/relu_scale_binding.cpp", "model_new.py"]
    assert "second version wins" in files["model_new.py"]
    assert files["kernels/relu_scale.cpp"] == 'extern "C" void f() {}\n'
    assert notes == ["ignored block for ../model.py: only model_new.py and kernels/ files are taken"]
    assert extract_files("```cuda kernels/../../x.cu\nx\n```\n")[1] == ["ignored block for kernels/../../x.cu: not a plain relative path"]


def score(url, answer, **kwargs):
    return asyncio.run(compute_score("cuda_agent/torch#2", answer, "suite#t1",
                                     extra_info={"device": "cpu", "task_source": "class Model: ..."},
                                     server_url=url, **kwargs))


def test_score_from_the_server():
    with FakeEnvServer(reward=3) as env:
        result = score(env.base_url, ANSWER)
        assert result["score"] == 3.0 and result["reward_null"] == 0 and result["correct"] == 1
        (_, path, body), = env.requests
        assert path == "/v1/evaluate" and body["device"] == "cpu"
        assert body["task"] == {"source": "class Model: ...", "name": "suite#t1"}
        assert set(body["files"]) == {"kernels/relu_scale.cpp", "kernels/relu_scale_binding.cpp", "model_new.py"}
        assert score(env.base_url, ANSWER, schedule="speedup")["score"] == 1.5
        assert score(env.base_url, ANSWER, schedule="binary")["score"] == 1.0


def test_no_files_is_minus_one_without_a_request():
    with FakeEnvServer(reward=3) as env:
        result = score(env.base_url, "I cannot do this.")
        assert result["score"] == -1.0 and not env.requests


def test_null_reward_is_flagged_not_minus_one():
    with FakeEnvServer(reward=None) as env:
        result = score(env.base_url, ANSWER)
    assert result["score"] == 0.0 and result["reward_null"] == 1


def test_server_busy_then_answers():
    with FakeEnvServer(reward=2, faults_429=1, retry_after="0") as env:
        assert score(env.base_url, ANSWER)["score"] == 2.0


def test_schedules():
    wrong = {"correct": False}
    fast = {"correct": True, "timing": {"speedup_vs_compile": 2.5}}
    assert schedule_reward("paper", -1, wrong) == -1.0
    assert schedule_reward("binary", 3, fast) == 1.0 and schedule_reward("binary", -1, wrong) == -1.0
    assert schedule_reward("speedup", 3, fast) == 2.5 and schedule_reward("speedup", -1, wrong) == -1.0
    assert schedule_reward("speedup", None, None) is None
    with pytest.raises(ValueError):
        schedule_reward("raw", 1, fast)
