"""fakes.py — the peers of the verl plug-in that cannot run here, as fakes, and a tiny real tokenizer.

- ``FakeTokenServer``: stands in for verl's LLM server manager (vLLM/SGLang behind
  ``server_manager.generate``): plays scripted replies, one per request, as token ids of the test
  tokenizer, and records every prompt it was sent.
- ``FakeEnvServer``: a fake ``cuda-agent serve`` (docs/server.md) on a thread of the test process,
  for the loop's unit tests until the real server exists (tests/train/test_serve_e2e.py uses the
  real one): sessions, calls with a turn limit (409), grade and evaluate with a configurable reward
  (``None``: no verdict), and faults — ``429`` answers with ``Retry-After`` for the first requests.
- ``make_tokenizer``: a byte-level BPE tokenizer trained in memory on a few sentences, with
  ChatML special tokens and a chat template that renders tools and tool calls (Hermes form).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from verl.workers.rollout.replica import TokenOutput

CHAT_TEMPLATE = (
    "{%- for m in messages -%}"
    "{%- if m.role == 'system' -%}<|im_start|>system\n{{ m.content }}"
    "{%- if tools %}\n# Tools\n{%- for t in tools %}\n{{ t | tojson }}{%- endfor %}{%- endif -%}<|im_end|>\n"
    "{%- elif m.role == 'assistant' -%}<|im_start|>assistant\n{{ m.content }}"
    "{%- for c in (m.tool_calls or []) %}<tool_call>{{ c.function | tojson }}</tool_call>{%- endfor -%}<|im_end|>\n"
    "{%- elif m.role == 'tool' -%}<|im_start|>tool\n{{ m.content }}<|im_end|>\n"
    "{%- else -%}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant\n{%- endif -%}"
)

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]


def make_tokenizer():
    """A real (tiny) Hugging Face tokenizer: byte-level BPE, so any text round-trips."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = ["bash utils/compile.sh", "python3 -m utils.verification", "kernels/relu.cpp model_new.py",
              '{"name": "Bash", "arguments": {"command": "ls"}}', "Your task: make the program faster."]
    core.train_from_iterator(corpus * 20, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        bos_token=None, unk_token=None)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<tool_call>", "</tool_call>"]})
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def hermes(content: str, calls: list[dict]) -> str:
    """A reply in Hermes form: the content, then one <tool_call> block per call."""
    return content + "".join(
        "<tool_call>" + json.dumps({"name": c["name"], "arguments": c["arguments"]}) + "</tool_call>" for c in calls
    )


class FakeTokenServer:
    """Fake of verl's server manager: ``generate`` answers with the next scripted text's tokens."""

    def __init__(self, tokenizer, replies: list[str]):
        self.tokenizer = tokenizer
        self.replies = list(replies)
        self.prompts: list[list[int]] = []
        self.sampling: list[dict] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **_: Any) -> TokenOutput:
        self.prompts.append(list(prompt_ids))
        self.sampling.append(dict(sampling_params))
        text = self.replies.pop(0) if self.replies else "(script exhausted)"
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        limit = int(sampling_params.get("max_tokens", len(ids)))
        return TokenOutput(token_ids=ids[:limit], log_probs=[-0.5] * len(ids[:limit]), stop_reason="completed")


TOOLS = [
    {"name": "Bash", "description": "run a command",
     "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
    {"name": "Write", "description": "write a file",
     "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["file_path", "content"]}},
]


class FakeEnvServer:
    """Fake ``cuda-agent serve``; use as a context manager, ``base_url`` while it runs."""

    def __init__(self, reward: Optional[float] = 2, turn_limit: int = 150, faults_429: int = 0, retry_after: str = "3"):
        self.reward = reward
        self.turn_limit = turn_limit
        self.faults_429 = faults_429
        self.retry_after = retry_after
        self.requests: list[tuple[str, str, Any]] = []
        self.sessions: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._httpd: Optional[ThreadingHTTPServer] = None

    def __enter__(self) -> "FakeEnvServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _answer(self, status: int, body: dict, headers: Optional[dict] = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                status, answer, headers = server.handle(method, self.path, body)
                self._answer(status, answer, headers)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_DELETE(self):
                self._handle("DELETE")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def handle(self, method: str, path: str, body: Any) -> tuple[int, dict, Optional[dict]]:
        with self._lock:
            self.requests.append((method, path, body))
            if self.faults_429 > 0:
                self.faults_429 -= 1
                return 429, {"error": {"code": "busy", "message": "queue full"}}, {"Retry-After": self.retry_after}
            parts = path.strip("/").split("/")
            if method == "POST" and parts == ["v1", "evaluate"]:
                result = {"reward": self.reward, "correct": self.reward is not None and self.reward > 0,
                          "outcome": "verdict" if self.reward is not None else "internal_error",
                          "reason": "fake judgement", "timing": {"speedup_vs_compile": 1.5}}
                return 200, {"reward": self.reward, "result": result}, None
            if method == "POST" and parts == ["v1", "sessions"]:
                sid = f"s{len(self.sessions) + 1}"
                self.sessions[sid] = {"calls": 0, "status": "open", "task": body["task"], "ids": {}}
                return 201, {"session_id": sid, "system_prompt": "SKILL.md for the fake",
                             "task_message": "Your task: make the program faster.", "tools": TOOLS,
                             "turn_limit": self.turn_limit, "expires_at": "2099-01-01T00:00:00Z"}, None
            if len(parts) >= 3 and parts[:2] == ["v1", "sessions"] and parts[2] in self.sessions:
                session = self.sessions[parts[2]]
                if method == "DELETE":
                    session["status"] = "closed"
                    return 200, {"session_id": parts[2], "status": "closed"}, None
                if parts[3:] == ["calls"]:
                    return self._call(session, body)
                if parts[3:] == ["grade"]:
                    session["status"] = "graded"
                    result = {"reward": self.reward, "outcome": "verdict" if self.reward is not None else "internal_error",
                              "correct": self.reward is not None and self.reward > 0, "reason": "fake judgement"}
                    return 200, {"session_id": parts[2], "reward": self.reward, "result": result}, None
            return 404, {"error": {"code": "not_found", "message": path}}, None

    def _call(self, session: dict, body: dict) -> tuple[int, dict, Optional[dict]]:
        if body["call_id"] in session["ids"]:
            return 200, {**session["ids"][body["call_id"]], "replayed": True}, None
        if session["calls"] >= self.turn_limit:
            return 409, {"error": {"code": "turn_limit", "message": "the session's turn limit is reached"}}, None
        session["calls"] += 1
        arguments = body["arguments"]
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                arguments = None
        names = {t["name"] for t in TOOLS}
        if body["tool"] not in names:
            observation = {"text": f"error: unknown tool '{body['tool']}'", "is_error": True}
        elif not isinstance(arguments, dict):
            observation = {"text": "error: arguments are not a JSON object", "is_error": True}
        else:
            observation = {"text": f"ran {body['tool']} {json.dumps(arguments, sort_keys=True)}", "is_error": False}
        answer = {"call_id": body["call_id"], "observation": observation, "calls_used": session["calls"],
                  "turn_limit": self.turn_limit, "replayed": False}
        session["ids"][body["call_id"]] = answer
        return 200, answer, None
