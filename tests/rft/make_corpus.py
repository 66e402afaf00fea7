"""make_corpus.py — writes tests/rft/corpus/: agent episodes in solve's record format (docs/agent.md)
with a known fate under `cuda-agent rft`'s default filters. Run it again after changing a case;
EXPECTED below is what test_rft.py checks.

    python3 tests/rft/make_corpus.py
"""

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"

TOOLS = [
    {"name": "Bash", "description": "run a command",
     "parameters": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"},
                                                     "run_in_background": {"type": "boolean"}},
                    "required": ["command"], "additionalProperties": False}},
    {"name": "Read", "description": "read a file",
     "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}, "offset": {"type": "integer"},
                                                     "limit": {"type": "integer"}},
                    "required": ["file_path"], "additionalProperties": False}},
    {"name": "Write", "description": "write a file",
     "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["file_path", "content"], "additionalProperties": False}},
    {"name": "Edit", "description": "edit a file",
     "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}, "old_string": {"type": "string"},
                                                     "new_string": {"type": "string"}, "replace_all": {"type": "boolean"}},
                    "required": ["file_path", "old_string", "new_string"], "additionalProperties": False}},
]

# Per filter, how many trajectories of the corpus it removes (first matching filter), and the kept.
EXPECTED = {"trajectories": 14, "kept": 3, "removed": {
    "bad_input": 2, "no_reward": 1, "outcome": 2, "unfinished": 1, "invalid_tool_call": 2,
    "repeated_calls": 1, "loop": 1, "over_long": 1}}

COMPILE = ("Bash", {"command": "bash utils/compile.sh"})
VERIFY = ("Bash", {"command": "python3 -m utils.verification"})
WRITE_K = ("Write", {"file_path": "kernels/k.cpp", "content": "// kernel\n"})
WRITE_M = ("Write", {"file_path": "model_new.py", "content": "class ModelNew: pass\n"})
EDIT_K = ("Edit", {"file_path": "kernels/k.cpp", "old_string": "a", "new_string": "b"})


def records(name, turns, reward=3, stop="model_finished", usage=None, judgement_record=False):
    """The records of one episode; `turns` is a list of call lists, (tool, arguments) each (arguments
    as a dict, or a string sent as is); a final answer without a call is appended for model_finished."""
    out = [{"version": 1, "type": "episode", "time": 0.0, "task": f"suite#{name}", "task_id": name,
            "model": "replay:x", "device": "cpu", "policy": "strict", "max_turns": 150,
            "system": "SKILL.md text", "task_message": f"Your task: make {name} faster.", "tools": TOOLS}]
    turn = 0
    for turn, calls in enumerate(turns, 1):
        tool_calls = [{"id": f"call_{turn}_{k}", "name": tool,
                       "arguments": args if isinstance(args, str) else json.dumps(args)}
                      for k, (tool, args) in enumerate(calls, 1)]
        out.append({"version": 1, "type": "assistant", "time": turn, "turn": turn, "content": f"step {turn}",
                    "tool_calls": tool_calls, "stop_reason": "tool_use",
                    "usage": usage or {"prompt_tokens": 1000 * turn, "completion_tokens": 100}})
        for call in tool_calls:
            out.append({"version": 1, "type": "observation", "time": turn, "turn": turn,
                        "tool_call_id": call["id"], "tool": call["name"], "text": "ok", "is_error": False,
                        "seconds": 0.1})
        out.append({"version": 1, "type": "turn", "time": turn, "turn": turn, "wall_s": 1.0, "tool_calls": len(calls)})
    if stop == "model_finished":
        turn += 1
        out.append({"version": 1, "type": "assistant", "time": turn, "turn": turn, "content": "Done.",
                    "tool_calls": [], "stop_reason": "end_turn", "usage": {"prompt_tokens": 1000 * turn,
                                                                          "completion_tokens": 10}})
    out.append({"version": 1, "type": "stop", "time": turn, "reason": stop, "turns": turn})
    if judgement_record:
        out.append({"version": 1, "type": "final_judgement", "time": turn,
                    "result": {"schema_version": 1, "reward": reward, "outcome": "verdict"}, "error": None})
    return out


def episode(name, *args, result_reward=..., **kwargs):
    folder = CORPUS / "episodes" / name
    folder.mkdir(parents=True)
    recs = records(name, *args, **kwargs)
    (folder / "trajectory.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    reward = kwargs.get("reward", 3) if result_reward is ... else result_reward
    stop = kwargs.get("stop", "model_finished")
    (folder / "result.json").write_text(json.dumps(
        {"version": 1, "task": f"suite#{name}", "stop_reason": stop, "reward": reward, "judge": None}, indent=1))
    return folder


def main():
    shutil.rmtree(CORPUS, ignore_errors=True)
    good = [[WRITE_K, WRITE_M], [COMPILE], [VERIFY]]
    episode("good_fast", good, reward=3)
    episode("good_correct", [[WRITE_K], [WRITE_M], [COMPILE], [VERIFY]], reward=1)
    episode("failed", good, reward=-1)
    episode("no_verdict", good, result_reward=None)
    episode("unfinished", good, reward=2, stop="max_turns")
    episode("unknown_tool", [[WRITE_K, ("WebSearch", {"query": "fast relu"})], [COMPILE]], reward=2)
    episode("bad_arguments", [[WRITE_K], [("Bash", '{"command": "ls"')]], reward=2)
    episode("repeated", [[WRITE_K, WRITE_M], [COMPILE], [COMPILE], [COMPILE], [VERIFY]], reward=2)
    episode("loop", [[WRITE_K, WRITE_M], [EDIT_K], [COMPILE], [EDIT_K], [COMPILE], [EDIT_K], [COMPILE]], reward=1)
    episode("over_long", good, reward=3, usage={"prompt_tokens": 140000, "completion_tokens": 100})
    truncated = episode("truncated", good, reward=3)
    text = (truncated / "trajectory.jsonl").read_text().splitlines()
    text[3] = text[3][: len(text[3]) // 2]  # line 4: cut in the middle, as a crash would leave it
    (truncated / "trajectory.jsonl").write_text("\n".join(text) + "\n")
    newer = episode("newer_version", good, reward=3)
    lines = [json.loads(line) for line in (newer / "trajectory.jsonl").read_text().splitlines()]
    lines[2]["version"] = 2
    (newer / "trajectory.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    # Two episodes back to back in one JSONL, rewards from their final_judgement records.
    combined = records("combined_good", good, reward=2, judgement_record=True) + \
        records("combined_failed", good, reward=-1, judgement_record=True)
    (CORPUS / "combined.jsonl").write_text("".join(json.dumps(r) + "\n" for r in combined))


if __name__ == "__main__":
    main()
