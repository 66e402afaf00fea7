"""JSONL → parquet for verl, run by the C++ commands (``python -m cuda_agent_verl.parquet KIND IN OUT``).

- ``rl``: rows of ``cuda-agent export verl`` — ``prompt`` (list of ``{role, content}``),
  ``data_source``, ``ability``, ``reward_model`` ``{style, ground_truth}``, ``extra_info`` (a
  struct), ``agent_name`` when present: the columns verl's ``RLHFDataset`` reads.
- ``sft``: rows of ``cuda-agent rft`` — ``messages`` and ``tools`` as JSON text (OpenAI form;
  tool schemas differ per tool, and parquet structs would fill every missing key with null),
  ``meta`` fields as columns (``task``, ``task_id``, ``reward``, ``turns``, ``source``);
  ``sft_dataset.JsonChatSFTDataset`` decodes them for verl's multi-turn SFT trainer.

A line that is not a JSON object stops the conversion with ``FILE:LINE`` (exit 1).
"""

from __future__ import annotations

import json
import sys
from typing import Any

RL_COLUMNS = ("data_source", "prompt", "ability", "reward_model", "extra_info")


def read_jsonl(path: str) -> list[dict[str, Any]]:
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON ({error.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number}: a row must be a JSON object")
            rows.append(row)
    return rows


def rl_table(rows: list[dict[str, Any]]):
    import pyarrow as pa

    for index, row in enumerate(rows, 1):
        missing = [c for c in RL_COLUMNS if c not in row]
        if missing:
            raise ValueError(f"row {index}: missing {', '.join(missing)}")
    return pa.Table.from_pylist(rows)


def sft_table(rows: list[dict[str, Any]]):
    import pyarrow as pa

    records = []
    for index, row in enumerate(rows, 1):
        if not isinstance(row.get("messages"), list):
            raise ValueError(f"row {index}: 'messages' must be a list")
        meta = row.get("meta") or {}
        records.append(
            {
                "messages": json.dumps(row["messages"], ensure_ascii=False),
                "tools": json.dumps(row.get("tools") or [], ensure_ascii=False),
                "task": str(meta.get("task", "")),
                "task_id": str(meta.get("task_id", "")),
                "reward": meta.get("reward"),
                "turns": int(meta.get("turns", 0)),
                "source": str(meta.get("source", "")),
            }
        )
    schema = pa.schema(
        [
            ("messages", pa.string()),
            ("tools", pa.string()),
            ("task", pa.string()),
            ("task_id", pa.string()),
            ("reward", pa.float64()),
            ("turns", pa.int64()),
            ("source", pa.string()),
        ]
    )
    return pa.Table.from_pylist(records, schema=schema)


def convert(kind: str, source: str, target: str) -> int:
    import pyarrow.parquet as pq

    rows = read_jsonl(source)
    table = rl_table(rows) if kind == "rl" else sft_table(rows)
    pq.write_table(table, target)
    return len(rows)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("rl", "sft"):
        print("usage: python -m cuda_agent_verl.parquet rl|sft IN.jsonl OUT.parquet", file=sys.stderr)
        return 2
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        print("pyarrow is not installed (pip install pyarrow; scripts/setup.sh)", file=sys.stderr)
        return 1
    try:
        count = convert(*argv)
    except ValueError as error:
        print(str(error), file=sys.stderr)
        return 1
    print(f"{count} rows -> {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
