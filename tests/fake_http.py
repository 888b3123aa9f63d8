"""What the local fake servers of the outside world (tests/fake_openai_server.py, tests/fake_prolific_server.py)
share: a quiet request handler that answers JSON."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass

    def send_json(self, status: int, payload: Any, headers: dict | None = None) -> None:
        """One JSON answer (an empty body for ``None``), with its length and any extra headers."""
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
