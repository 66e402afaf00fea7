"""Tool calls in a model's text, for the cuda_agent verl loop.

Two formats, both of the Qwen family's chat templates:

- Hermes (what ``vllm serve --tool-call-parser hermes`` reads, and therefore what ``cuda-agent
  solve`` gets from a Qwen model through its OpenAI-compatible API):
  ``<tool_call>{"name": "Bash", "arguments": {"command": "ls"}}</tool_call>``
  (``"parameters"`` is taken for ``"arguments"``; arguments may also be a JSON string).
- Qwen3-Coder XML: ``<tool_call><function=Bash><parameter=command>ls</parameter></function></tool_call>``;
  a parameter whose schema type is not ``string`` is read as JSON when it parses.

A call that cannot be read (unclosed block, bad JSON, no name) is returned with ``error`` set, so
the loop can answer it with an error observation: a malformed call never raises.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)
_FUNCTION = re.compile(r"<function=([^>\s]+)\s*>(.*?)(</function>|$)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)\s*>(.*?)(</parameter>|(?=<parameter=)|$)", re.DOTALL)


@dataclass
class ParsedCall:
    """One tool call: ``arguments`` is a dict when it was read, else the raw text; ``error`` says
    why the call is malformed (None when it is well formed)."""

    name: str
    arguments: Any
    error: str | None = None


def parse_tool_calls(text: str, tools: list[dict] | None = None) -> tuple[str, list[ParsedCall]]:
    """Splits ``text`` into the content outside tool-call blocks and the calls, in order.

    ``tools`` (``[{"name", "parameters"}]``, the server's list) types the XML parameters."""
    calls: list[ParsedCall] = []
    for match in _BLOCK.finditer(text):
        body, closing = match.group(1).strip(), match.group(2)
        if not closing:
            calls.append(ParsedCall("", body, "a <tool_call> block without its </tool_call>"))
            continue
        if body.startswith("<function="):
            calls.append(_parse_xml(body, tools or []))
        else:
            calls.append(_parse_json(body))
    content = _BLOCK.sub("", text).strip()
    return content, calls


def _parse_json(body: str) -> ParsedCall:
    try:
        value = json.loads(body)
    except json.JSONDecodeError as error:
        return ParsedCall("", body, f"the tool call is not JSON: {error.msg} at character {error.pos}")
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return ParsedCall("", body, 'a tool call must be {"name": "<tool>", "arguments": {...}}')
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return ParsedCall(value["name"], arguments, f"the arguments of {value['name']} are not a JSON object")
    if not isinstance(arguments, dict):
        return ParsedCall(value["name"], json.dumps(arguments),
                          f"the arguments of {value['name']} are not a JSON object")
    return ParsedCall(value["name"], arguments)


def _parse_xml(body: str, tools: list[dict]) -> ParsedCall:
    function = _FUNCTION.match(body)
    if function is None:
        return ParsedCall("", body, "a <function=NAME> tool call that cannot be read")
    name = function.group(1)
    if not function.group(3):
        return ParsedCall(name, body, f"<function={name}> without its </function>")
    schema: Any = next((t.get("parameters", {}) for t in tools if t.get("name") == name), {})
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    arguments: dict[str, Any] = {}
    for parameter in _PARAMETER.finditer(function.group(2)):
        key, raw = parameter.group(1), parameter.group(2)
        # The template puts the value between newlines; strip exactly those.
        if raw.startswith("\n"):
            raw = raw[1:]
        if raw.endswith("\n"):
            raw = raw[:-1]
        kind = properties.get(key, {}).get("type", "string") if isinstance(properties.get(key), dict) else "string"
        if kind != "string":
            try:
                arguments[key] = json.loads(raw)
                continue
            except json.JSONDecodeError:
                pass
        arguments[key] = raw
    return ParsedCall(name, arguments)
