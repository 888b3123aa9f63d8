"""Fixtures for the model runtime: tiny local checkpoints and a small OpenAI-compatible SSE server."""

from __future__ import annotations

import io
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from models_runtime import registry
from models_runtime.tiny import build_tiny_causal_lm, build_tiny_llava


@pytest.fixture(scope="session")
def tiny_llava_path(tmp_path_factory) -> str:
    return build_tiny_llava(tmp_path_factory.mktemp("models") / "tiny-llava")


@pytest.fixture(scope="session")
def tiny_causal_path(tmp_path_factory) -> str:
    return build_tiny_causal_lm(tmp_path_factory.mktemp("models") / "tiny-causal")


@pytest.fixture(autouse=True)
def _release_backends():
    """Each test starts and ends with an empty registry (closed backends free their memory)."""
    registry.release_all()
    yield
    registry.release_all()


@pytest.fixture
def png_bytes() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


# -- a small OpenAI-compatible server ------------------------------------------------------------------


@dataclass
class FakeOpenAI:
    """What the fake server does, and what it saw. Tests change the fields before calling it."""

    model: str = "tiny-model"
    api_key: str | None = None  # when set, requests must carry "Authorization: Bearer <api_key>"
    chunks: list[str] = field(default_factory=lambda: ["The ", "answer ", "is ", "B.\n", "Answer: B"])
    usage: dict | None = field(default_factory=lambda: {"prompt_tokens": 17, "completion_tokens": 5})
    # (status, extra headers) to answer the next requests with, before any other check
    failures: list[tuple[int, dict]] = field(default_factory=list)
    delay_before_response: float = 0.0
    stall_after_chunks: int | None = None  # stop sending (without closing) after this many chunks
    requests: list[dict] = field(default_factory=list)
    base_url: str = ""
    stop_event: threading.Event = field(default_factory=threading.Event)

    def record(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        self.requests.append({"path": handler.path, "headers": dict(handler.headers), "body": body})


def _handler_for(fake: FakeOpenAI):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep pytest output clean
            pass

        def _json(self, status: int, payload: dict, headers: dict | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _event(self, payload) -> None:
            data = payload if isinstance(payload, str) else json.dumps(payload)
            self.wfile.write(f"data: {data}\n\n".encode())
            self.wfile.flush()

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            fake.record(self, body)
            if self.path != "/v1/chat/completions":
                return self._json(404, {"error": {"message": f"no route {self.path}"}})
            if fake.failures:
                status, headers = fake.failures.pop(0)
                return self._json(status, {"error": {"message": f"simulated {status}"}}, headers)
            if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                return self._json(401, {"error": {"message": "Incorrect API key provided."}})
            if body.get("model") != fake.model:
                return self._json(
                    404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}}
                )
            if fake.delay_before_response:
                fake.stop_event.wait(fake.delay_before_response)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b": keep-alive comment\n\n")
            for index, chunk in enumerate(fake.chunks):
                if fake.stall_after_chunks is not None and index >= fake.stall_after_chunks:
                    fake.stop_event.wait(5)
                    return
                delta = {"role": "assistant", "content": chunk} if index == 0 else {"content": chunk}
                self._event(
                    {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
                )
            self._event({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if fake.usage and (body.get("stream_options") or {}).get("include_usage"):
                self._event({"id": "c1", "choices": [], "usage": fake.usage})
            self._event("[DONE]")

    return Handler


@pytest.fixture
def fake_openai():
    fake = FakeOpenAI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(fake))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield fake
    fake.stop_event.set()  # wake handlers that are stalling on purpose
    server.shutdown()
    server.server_close()
    time.sleep(0)  # let daemon handler threads notice the event
