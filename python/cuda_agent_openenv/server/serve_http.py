"""A blocking client of one ``cuda-agent serve`` (/v1, docs/server.md), standard library only.

``request`` answers ``(status, headers, body)``; a request the server did not answer within its
timeout raises ``TimeoutError``; one that could not reach the server raises ``ConnectionError``.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any


class ServeHTTP:
    def __init__(self, base_url: str, token: str | None = None):
        self.base_url = base_url.rstrip("/")
        self.token = token

    def request(self, method: str, path: str, body: dict | None, timeout_s: float) -> tuple[int, dict, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as response:
                return response.status, dict(response.headers), _json(response.read())
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), _json(error.read())
        except TimeoutError as error:
            raise TimeoutError(f"{method} {path}: no answer within {timeout_s:g} s") from error
        except urllib.error.URLError as error:
            if isinstance(error.reason, (socket.timeout, TimeoutError)):
                raise TimeoutError(f"{method} {path}: no answer within {timeout_s:g} s") from error
            raise ConnectionError(f"{method} {self.base_url}{path}: {error.reason}") from error
        except (ConnectionError, http_client_errors()) as error:
            raise ConnectionError(f"{method} {self.base_url}{path}: {error}") from error


def http_client_errors():
    import http.client

    return (http.client.RemoteDisconnected, http.client.BadStatusLine, http.client.IncompleteRead)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {"error": {"code": "bad_body", "message": raw[:300].decode(errors="replace")}}


def error_of(body: Any) -> tuple[str, str]:
    """``(code, message)`` of a ``{"error": {...}}`` body."""
    error = body.get("error", {}) if isinstance(body, dict) else {}
    return str(error.get("code", "unknown")), str(error.get("message", body))


def retry_after(headers: dict, default: float = 1.0) -> float:
    for key, value in headers.items():
        if key.lower() == "retry-after":
            try:
                return max(float(value), 0.0)
            except ValueError:
                break
    return default
