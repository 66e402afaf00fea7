"""fake_llm_server.py — a fake LLM server that plays a script and misbehaves on demand.

It speaks the OpenAI chat completions API (POST .../chat/completions) and the Anthropic Messages
API (POST .../v1/messages), streamed (SSE) or not, with tool calls. Python standard library only.

As a program (prints the port on its first stdout line, then serves until killed):

    python3 tests/fakes/fake_llm_server.py --script turns.json [--faults faults.json] [--requests-log log.jsonl]
    cuda-agent llm --model openai:http://127.0.0.1:PORT/v1#fake
    ANTHROPIC_BASE_URL=http://127.0.0.1:PORT cuda-agent llm --model anthropic:fake   # no key needed

In a test (the server runs on a thread of the test process):

    from fake_llm_server import FakeLlmServer
    with FakeLlmServer(script=[{"content": "hi"}], faults=["status:429", "split"]) as server:
        run(f"openai:{server.base_url}/v1#fake")
        server.requests  # every model request: {"path", "headers" (lower-case names), "body" (parsed JSON)}

The script is a list of turns, played in order, one per answered request:

    {"content": "text",                                    # optional
     "tool_calls": [{"name": "Bash", "arguments": {...}}],  # arguments: an object, or a string sent as is
                                                            #   (to play malformed calls); "id" optional
     "stop_reason": "tool_use",                             # optional: end_turn | tool_use | max_tokens
     "usage": {"prompt": 100, "completion": 20, "cached": 0}}  # optional

When the script is exhausted the server answers {"content": "(script exhausted)"} with end_turn.

Faults are consumed one per model request, in order (an empty list or "ok" means a normal answer):

    "ok"                       no fault
    "slow"                     {"kind": "slow", "delay": 0.3, "between": 0.02}: waits before the answer
                               and between streamed pieces (a delay past the client's stall timeout
                               makes it retry)
    "status:429"               {"kind": "status", "code": 429, "retry_after": 1, "message": "..."}:
                               an error answer in the provider's format (any code: 401, 500, 503 ...)
    "malformed"                invalid JSON body (not streamed) or invalid event data (streamed)
    "split"                    {"kind": "split", "sizes": [1, 3, 7]}: the body flushed in tiny pieces
    "disconnect"               the socket closed halfway through the body
    "ignore_stream"            a streamed request gets a whole JSON answer (a proxy that drops SSE)
    "overloaded"               streamed: an `error` event (Anthropic) / error chunk (OpenAI) mid-stream;
                               not streamed: HTTP 529

A request that gets a complete answer (ok, slow, split, ignore_stream) consumes a turn; the others do not, so the
retry gets the same turn. Control endpoints: GET /_requests (JSON list), POST /_script (replace the
turns), POST /_faults (append faults), POST /_reset (turns, faults and requests).
"""

import argparse
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EXHAUSTED_TURN = {"content": "(script exhausted)", "stop_reason": "end_turn"}


def parse_fault(fault):
    """Normalises a fault (string or object) to a dict with a "kind"."""
    if fault is None or fault == "ok":
        return {"kind": "ok"}
    if isinstance(fault, dict):
        return dict(fault)
    if fault.startswith("status:"):
        return {"kind": "status", "code": int(fault.split(":", 1)[1])}
    return {"kind": fault}


def pieces(text, size):
    return [text[i:i + size] for i in range(0, len(text), size)] or []


def arguments_text(arguments):
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def stop_reason_of(turn):
    if turn.get("stop_reason"):
        return turn["stop_reason"]
    return "tool_use" if turn.get("tool_calls") else "end_turn"


def usage_of(turn):
    usage = turn.get("usage", {})
    return usage.get("prompt", 100), usage.get("completion", 20), usage.get("cached", 0)


# --- OpenAI chat completions -------------------------------------------------------------------

OPENAI_FINISH = {"tool_use": "tool_calls", "end_turn": "stop", "max_tokens": "length"}


def openai_calls(turn, number):
    calls = []
    for i, call in enumerate(turn.get("tool_calls", [])):
        calls.append({"id": call.get("id", f"call_{number}_{i}"), "name": call["name"],
                      "arguments": arguments_text(call.get("arguments", {}))})
    return calls


def openai_usage(turn):
    prompt, completion, cached = usage_of(turn)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}


def openai_body(turn, number, model):
    message = {"role": "assistant", "content": turn.get("content")}
    calls = openai_calls(turn, number)
    if calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
    return {"id": f"chatcmpl-fake-{number}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": OPENAI_FINISH.get(stop_reason_of(turn), stop_reason_of(turn))}],
            "usage": openai_usage(turn)}


def openai_events(turn, number, model, include_usage):
    """The SSE frames of a streamed answer, as bytes, one per event."""
    def chunk(delta, finish=None):
        return {"id": f"chatcmpl-fake-{number}", "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    chunks = [chunk({"role": "assistant", "content": ""})]
    for piece in pieces(turn.get("content") or "", 7):
        chunks.append(chunk({"content": piece}))
    for i, call in enumerate(openai_calls(turn, number)):
        chunks.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                             "function": {"name": call["name"], "arguments": ""}}]}))
        for piece in pieces(call["arguments"], 5):
            chunks.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    chunks.append(chunk({}, OPENAI_FINISH.get(stop_reason_of(turn), stop_reason_of(turn))))
    if include_usage:
        chunks.append({"id": f"chatcmpl-fake-{number}", "object": "chat.completion.chunk", "created": 0,
                       "model": model, "choices": [], "usage": openai_usage(turn)})
    frames = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
    frames.append(b"data: [DONE]\n\n")
    return frames


def openai_error(code, message):
    return {"error": {"message": message, "type": "fake_error", "code": code}}


# --- Anthropic messages --------------------------------------------------------------------------

def anthropic_calls(turn, number):
    calls = []
    for i, call in enumerate(turn.get("tool_calls", [])):
        calls.append({"id": call.get("id", f"toolu_{number}_{i}"), "name": call["name"],
                      "arguments": call.get("arguments", {})})
    return calls


def anthropic_body(turn, number, model):
    prompt, completion, cached = usage_of(turn)
    content = []
    if turn.get("content"):
        content.append({"type": "text", "text": turn["content"]})
    for call in anthropic_calls(turn, number):
        arguments = call["arguments"]
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass  # sent as a string: the client must cope
        content.append({"type": "tool_use", "id": call["id"], "name": call["name"], "input": arguments})
    return {"id": f"msg_fake_{number}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason_of(turn), "stop_sequence": None,
            "usage": {"input_tokens": prompt - cached, "cache_read_input_tokens": cached,
                      "cache_creation_input_tokens": 0, "output_tokens": completion}}


def anthropic_events(turn, number, model):
    prompt, completion, cached = usage_of(turn)
    events = [("message_start", {"type": "message_start", "message": {
        "id": f"msg_fake_{number}", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": prompt - cached, "cache_read_input_tokens": cached,
                  "cache_creation_input_tokens": 0, "output_tokens": 1}}}),
        ("ping", {"type": "ping"})]
    index = 0
    if turn.get("content"):
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": {"type": "text", "text": ""}}))
        for piece in pieces(turn["content"], 7):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                    "delta": {"type": "text_delta", "text": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for call in anthropic_calls(turn, number):
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}}))
        for piece in pieces(arguments_text(call["arguments"]), 5):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                    "delta": {"type": "input_json_delta", "partial_json": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop_reason_of(turn), "stop_sequence": None},
                                     "usage": {"output_tokens": completion}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events]


def anthropic_error(code, message):
    kind = {429: "rate_limit_error", 401: "authentication_error", 529: "overloaded_error"}.get(code, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


# --- the server ----------------------------------------------------------------------------------

class FakeState:
    """Turns, faults and recorded requests, shared by the handler threads."""

    def __init__(self, script=None, faults=None, requests_log=None):
        self.lock = threading.Lock()
        self.script = list(script or [])
        self.faults = [parse_fault(f) for f in (faults or [])]
        self.requests = []
        self.answered = 0
        self.requests_log = requests_log

    def record(self, entry):
        with self.lock:
            self.requests.append(entry)
            if self.requests_log:
                with open(self.requests_log, "a") as f:
                    f.write(json.dumps(entry) + "\n")

    def next_fault(self):
        with self.lock:
            return self.faults.pop(0) if self.faults else {"kind": "ok"}

    def take_turn(self, consume):
        """The next turn and its number; with `consume` it is used up at once, before it is sent: a
        client that reads the answer and asks again at once must get the next turn, not this one."""
        with self.lock:
            turn = self.script[self.answered] if self.answered < len(self.script) else EXHAUSTED_TURN
            number = self.answered + 1
            if consume:
                self.answered += 1
            return turn, number


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeLLM/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    @property
    def state(self):
        return self.server.state

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send_plain(self, code, body, content_type="application/json", headers=None):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def do_GET(self):
        if self.path == "/_requests":
            with self.state.lock:
                self.send_plain(200, self.state.requests)
            return
        self.send_plain(404, {"error": {"message": f"no GET {self.path}"}})

    def do_POST(self):
        raw = self.read_body()
        if self.path.startswith("/_"):
            self.control(raw)
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        self.state.record({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                           "body": body})
        if self.path.endswith("/chat/completions"):
            self.answer("openai", body if isinstance(body, dict) else {})
        elif self.path.endswith("/v1/messages"):
            self.answer("anthropic", body if isinstance(body, dict) else {})
        else:
            self.send_plain(404, {"error": {"message": f"no POST {self.path}"}})

    def control(self, raw):
        payload = json.loads(raw) if raw else None
        with self.state.lock:
            if self.path == "/_script":
                self.state.script = list(payload or [])
                self.state.answered = 0
            elif self.path == "/_faults":
                self.state.faults.extend(parse_fault(f) for f in (payload or []))
            elif self.path == "/_reset":
                self.state.script, self.state.faults, self.state.requests = [], [], []
                self.state.answered = 0
            else:
                self.send_plain(404, {"error": {"message": f"no control {self.path}"}})
                return
        self.send_plain(200, {"ok": True})

    def answer(self, provider, request):
        fault = self.state.next_fault()
        kind = fault["kind"]
        model = request.get("model", "fake")
        stream = bool(request.get("stream")) and kind != "ignore_stream"
        error_body = openai_error if provider == "openai" else anthropic_error
        if kind == "slow":
            time.sleep(fault.get("delay", 0.3))
        if kind == "status":
            code = fault["code"]
            headers = {}
            if "retry_after" in fault:
                headers["Retry-After"] = str(fault["retry_after"])
            self.send_plain(code, error_body(code, fault.get("message", f"fake error {code}")), headers=headers)
            return
        if kind == "overloaded" and not stream:
            self.send_plain(529, error_body(529, "Overloaded"))
            return
        # A faulted answer (cut, malformed) leaves its turn for the retry.
        turn, number = self.state.take_turn(consume=kind in ("ok", "slow", "split", "ignore_stream"))
        if stream:
            if provider == "openai":
                include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
                frames = openai_events(turn, number, model, include_usage)
            else:
                frames = anthropic_events(turn, number, model)
            self.send_stream(frames, fault, provider)
        else:
            body = (openai_body if provider == "openai" else anthropic_body)(turn, number, model)
            self.send_whole(json.dumps(body).encode(), fault)

    def write_pieces(self, data, fault):
        """Writes data whole, or in the fault's tiny pieces (split), or slowly."""
        kind = fault["kind"]
        if kind == "split":
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sizes = fault.get("sizes", [1, 3, 7])
            at, i = 0, 0
            while at < len(data):
                size = sizes[i % len(sizes)]
                self.wfile.write(data[at:at + size])
                self.wfile.flush()
                time.sleep(0.0001)
                at += size
                i += 1
        else:
            self.wfile.write(data)
            self.wfile.flush()

    def send_whole(self, data, fault):
        kind = fault["kind"]
        if kind == "malformed":
            data = data[: len(data) // 2]  # valid start, cut JSON: a 200 that cannot be parsed
            self.send_plain(200, data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        if kind == "disconnect":
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.write_pieces(data, fault)
        self.close_connection = True

    def send_stream(self, frames, fault, provider):
        kind = fault["kind"]
        if kind == "malformed":
            bad = b"data: {\"choices\": [{\"delta\": {\"content\": \"x\"\n\n" if provider == "openai" else \
                b"event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0,\n\n"
            frames = frames[:2] + [bad] + frames[2:]
        if kind == "overloaded":
            error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}} \
                if provider == "anthropic" else {"error": {"message": "Overloaded", "type": "server_error"}}
            frame = (b"event: error\n" if provider == "anthropic" else b"") + \
                f"data: {json.dumps(error)}\n\n".encode()
            frames = frames[:2] + [frame]
        if kind == "disconnect":
            data = b"".join(frames)
            frames = [data[: len(data) // 2]]  # cut inside an event, before the final one
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the body ends when the socket closes
        self.end_headers()
        self.wfile.write(b": fake llm stream\n\n")
        for frame in frames:
            if kind == "slow":
                time.sleep(fault.get("between", 0.02))
            self.write_pieces(frame, fault)
        self.close_connection = True


class QuietServer(ThreadingHTTPServer):
    """A client that gave up (stall timeout) makes our writes fail: not worth a traceback."""
    daemon_threads = True

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class FakeLlmServer:
    """The server on a background thread: `with FakeLlmServer(script, faults) as s: s.base_url`."""

    def __init__(self, script=None, faults=None, requests_log=None):
        self.state = FakeState(script, faults, requests_log)
        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.state = self.state
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.thread = None

    @property
    def requests(self):
        with self.state.lock:
            return list(self.state.requests)

    def add_faults(self, faults):
        with self.state.lock:
            self.state.faults.extend(parse_fault(f) for f in faults)

    def __enter__(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--script", help="JSON file: the list of turns")
    parser.add_argument("--faults", help="JSON file: the list of faults")
    parser.add_argument("--requests-log", help="append every model request to this JSONL file")
    args = parser.parse_args()
    script = json.load(open(args.script)) if args.script else []
    faults = json.load(open(args.faults)) if args.faults else []
    server = FakeLlmServer(script, faults, args.requests_log)
    print(server.port, flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
