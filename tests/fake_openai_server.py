"""A small OpenAI-compatible chat-completions server (SSE ``data:`` lines, ``[DONE]``) on 127.0.0.1.

Shared by the models_runtime tests, the model-check tests and benchmarks/runtime_overhead.py: a real HTTP
server in a thread, so the backend's own HTTP client is exercised (no mock of it).
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.fake_http import JsonHandler


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
    # How a 200 is sent: "sse" (streamed), "json" (one chat.completion, as servers that ignore stream: true),
    # "html" (a web page, as a proxy or a web UI at the wrong base_url)
    respond_as: str = "sse"
    # For the next requests: send an {"error": ...} event after this many chunks, then [DONE]
    stream_errors: list[int] = field(default_factory=list)
    truncate_after_chunks: int | None = None  # close the stream cleanly after this many chunks: no finish, no [DONE]
    # Until this time.monotonic(), every request gets 429 with Retry-After: `retry_after` or the seconds left
    rate_limited_until: float = 0.0
    retry_after: str | None = None
    error_message: str | None = None  # the message of error answers (default: one naming the status)
    page_text: str = "<h1>Welcome to nginx!</h1>"  # the body of respond_as="html"
    requests: list[dict] = field(default_factory=list)
    base_url: str = ""
    stop_event: threading.Event = field(default_factory=threading.Event)

    def record(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        self.requests.append(
            {"path": handler.path, "headers": dict(handler.headers), "body": body, "at": time.monotonic()}
        )


def handler_for(fake: FakeOpenAI):
    class Handler(JsonHandler):

        def _event(self, payload) -> None:
            data = payload if isinstance(payload, str) else json.dumps(payload)
            self.wfile.write(f"data: {data}\n\n".encode())
            self.wfile.flush()

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            fake.record(self, body)
            if self.path != "/v1/chat/completions":
                return self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            if fake.failures:
                status, headers = fake.failures.pop(0)
                return self.send_json(status, {"error": {"message": fake.error_message or f"simulated {status}"}},
                                  headers)
            left = fake.rate_limited_until - time.monotonic()
            if left > 0:
                retry_after = fake.retry_after or str(math.ceil(left))
                return self.send_json(429, {"error": {"message": "Rate limit reached, slow down."}},
                                  {"Retry-After": retry_after})
            if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                return self.send_json(401, {"error": {"message": fake.error_message or "Incorrect API key provided."}})
            if body.get("model") != fake.model:
                return self.send_json(
                    404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}}
                )
            if fake.delay_before_response:
                fake.stop_event.wait(fake.delay_before_response)
            if fake.respond_as == "json":
                return self._completion()
            if fake.respond_as == "html":
                return self._page()
            error_after = fake.stream_errors.pop(0) if fake.stream_errors else None
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.end_headers()
            self.wfile.write(b": keep-alive comment\n\n")
            for index, chunk in enumerate([*fake.chunks, None]):
                if index == error_after:
                    self._event({"error": {"message": "CUDA out of memory", "type": "server_error", "code": 500}})
                    return self._event("[DONE]")
                if fake.truncate_after_chunks is not None and index >= fake.truncate_after_chunks:
                    return
                if fake.stall_after_chunks is not None and index >= fake.stall_after_chunks:
                    fake.stop_event.wait(5)
                    return
                if chunk is None:
                    break
                delta = {"role": "assistant", "content": chunk} if index == 0 else {"content": chunk}
                self._event(
                    {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
                )
            self._event({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if fake.usage and (body.get("stream_options") or {}).get("include_usage"):
                self._event({"id": "c1", "choices": [], "usage": fake.usage})
            self._event("[DONE]")

        def _completion(self) -> None:
            payload = {
                "id": "c1", "object": "chat.completion", "model": fake.model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "".join(fake.chunks)}}],
            }
            if fake.usage:
                payload["usage"] = fake.usage
            self.send_json(200, payload)

        def _page(self) -> None:
            data = f"<!doctype html><html><body>{fake.page_text}</body></html>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def serving(fake: FakeOpenAI | None = None, port: int = 0) -> Iterator[FakeOpenAI]:
    """Run the server while the block runs; ``fake.base_url`` is its ``.../v1`` URL."""
    fake = fake or FakeOpenAI()
    server = ThreadingHTTPServer(("127.0.0.1", port), handler_for(fake))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield fake
    finally:
        fake.stop_event.set()  # wake handlers that are stalling on purpose
        server.shutdown()
        server.server_close()


def main(argv: list[str] | None = None) -> None:
    """Serve in the foreground (benchmarks run it as a separate process); prints the base URL, then waits."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", default="tiny-model")
    parser.add_argument("--chunk", action="append", help="a streamed chunk (repeat); default: a short answer")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before the response starts (TTFT)")
    args = parser.parse_args(argv)
    fake = FakeOpenAI(model=args.model, delay_before_response=args.delay)
    if args.chunk:
        fake.chunks = args.chunk
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with serving(fake, port=args.port):
        print(fake.base_url, flush=True)
        try:
            while not done.wait(0.5):
                fake.requests.clear()  # a long run keeps no history
        except KeyboardInterrupt:
            pass
    sys.exit(0)


if __name__ == "__main__":
    main()
