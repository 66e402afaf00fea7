"""verl's multi-turn SFT dataset over ``cuda-agent rft``'s parquet (stage 2).

``messages`` and ``tools`` are stored as JSON text (see ``parquet.py``); this subclass of verl's
``MultiTurnSFTDataset`` decodes them after reading, so the chat template gets real tool calls and
tool schemas. Use it with ``data.custom_cls.path`` = this file, ``data.custom_cls.name`` =
``JsonChatSFTDataset``.
"""

from __future__ import annotations

import json
from typing import Any

from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset


def decode_json_column(value: Any) -> Any:
    """A JSON-text cell as Python objects (other values unchanged)."""
    return json.loads(value) if isinstance(value, str) else value


class JsonChatSFTDataset(MultiTurnSFTDataset):
    """MultiTurnSFTDataset whose ``messages``/``tools`` columns hold JSON text."""

    def _read_files_and_process(self) -> None:
        super()._read_files_and_process()
        self.messages = [decode_json_column(m) for m in self.messages]
        if self.tools is not None:
            self.tools = [decode_json_column(t) for t in self.tools]

    def _build_messages(self, example: dict) -> list:
        example = dict(example)
        example[self.messages_key] = decode_json_column(example[self.messages_key])
        return super()._build_messages(example)
