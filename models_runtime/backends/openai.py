"""Any OpenAI-compatible ``/chat/completions`` server (vLLM, SGLang, TGI, Ollama, hosted APIs), streamed over SSE.

Settings:

- ``base_url`` (required), e.g. ``http://127.0.0.1:8001/v1``; ``model`` (required): the served model name.
- ``api_key_env``: the NAME of an environment variable holding the key. It is read at call time and never stored.
- ``connect_timeout`` (default 5 s), ``read_timeout`` (default 60 s, also the longest gap between chunks).
- ``max_retries`` (default 3) and ``backoff_base`` (default 0.5 s): retries on 429, 5xx, connection errors and
  timeouts, with exponential backoff and full jitter, only until the first chunk has been streamed.
- ``extra_body`` (dict): merged into the request body (a ``None`` value removes a key, e.g. ``stream_options``).
"""

from __future__ import annotations

import base64
import json
import os
import random
import time
from collections.abc import Iterator

import httpx

from models_runtime.base import (
    Backend,
    ImagePart,
    Message,
    ModelRequest,
    PermanentModelError,
    Stream,
    TransientModelError,
)

SETTINGS_KEYS = {
    "base_url",
    "model",
    "api_key_env",
    "connect_timeout",
    "read_timeout",
    "max_retries",
    "backoff_base",
    "extra_body",
}
RETRY_STATUSES = {429, 500, 502, 503, 504} | set(range(505, 600))
MAX_BACKOFF = 30.0  # seconds; also caps a server's Retry-After


class _Retryable(Exception):
    """A failure before the first chunk that is worth another attempt."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, settings: dict | None = None):
        super().__init__(settings)
        unknown = set(self.settings) - SETTINGS_KEYS
        if unknown:
            raise PermanentModelError(
                f"unknown openai setting(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(SETTINGS_KEYS))}"
            )
        for key in ("base_url", "model"):
            if not self.settings.get(key):
                raise PermanentModelError(f'openai backend needs a "{key}" setting')
        self.base_url = str(self.settings["base_url"]).rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise PermanentModelError(
                f"openai base_url must start with http:// or https://, got {self.base_url!r}"
            )
        self.model = str(self.settings["model"])
        self.api_key_env = self.settings.get("api_key_env") or None
        self.max_retries = int(self.settings.get("max_retries", 3))
        self.backoff_base = float(self.settings.get("backoff_base", 0.5))
        self.extra_body = dict(self.settings.get("extra_body") or {})
        read_timeout = float(self.settings.get("read_timeout", 60))
        self.timeout = httpx.Timeout(
            connect=float(self.settings.get("connect_timeout", 5)),
            read=read_timeout,
            write=read_timeout,
            pool=read_timeout,
        )
        self._client = httpx.Client(timeout=self.timeout)

    def close(self) -> None:
        self._client.close()

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    # -- request -------------------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise PermanentModelError(
                    f"environment variable {self.api_key_env} (api_key_env) is not set or empty; "
                    f"it should hold the API key for {self.base_url}"
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def body(self, request: ModelRequest) -> dict:
        settings = request.settings
        body = {
            "model": self.model,
            "messages": [_message_json(message) for message in request.messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": settings.max_new_tokens,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
        }
        if settings.seed is not None:
            body["seed"] = settings.seed
        if settings.stop:
            body["stop"] = list(settings.stop)
        body.update(self.extra_body)
        return {key: value for key, value in body.items() if value is not None}

    # -- streaming -----------------------------------------------------------------------------------------

    def _chunks(self, request: ModelRequest, stream: Stream) -> Iterator[str]:
        body = self.body(request)
        headers = self._headers()
        attempt = 0
        while True:
            yielded = False
            try:
                for text in self._attempt(body, headers, stream):
                    yielded = True
                    yield text
                return
            except _Retryable as exc:
                if yielded:
                    raise TransientModelError(f"{self.url}: stream broke after it started: {exc}") from exc
                if attempt >= self.max_retries:
                    raise TransientModelError(
                        f"{self.url}: gave up after {attempt + 1} attempt(s): {exc}"
                    ) from exc
                time.sleep(self._backoff(attempt, exc.retry_after))
                attempt += 1

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        # Full jitter spreads retries from many workers; a server's Retry-After is a floor.
        delay = random.uniform(0, min(MAX_BACKOFF, self.backoff_base * 2**attempt))
        if retry_after is not None:
            delay = max(delay, min(retry_after, MAX_BACKOFF))
        return delay

    def _attempt(self, body: dict, headers: dict, stream: Stream) -> Iterator[str]:
        """One HTTP request. Raises _Retryable for transient failures, PermanentModelError for the rest."""
        try:
            with self._client.stream("POST", self.url, json=body, headers=headers) as response:
                if response.status_code != 200:
                    self._raise_for_status(response)
                yield from self._read_events(response, stream)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise PermanentModelError(f"{self.url}: bad URL: {exc}") from exc
        except httpx.TimeoutException as exc:
            raise _Retryable(f"timed out ({type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            raise _Retryable(f"connection failed ({type(exc).__name__}: {exc})") from exc

    def _raise_for_status(self, response: httpx.Response) -> None:
        response.read()
        status = response.status_code
        message = _error_message(response)
        where = f"{self.url} answered {status} {response.reason_phrase}"
        if status in RETRY_STATUSES:
            raise _Retryable(f"{where}: {message}", _retry_after(response))
        hint = {
            401: f" (check the API key in ${self.api_key_env})"
            if self.api_key_env
            else " (no api_key_env is set)",
            404: f" (is the model name {self.model!r} served there?)",
        }.get(status, "")
        raise PermanentModelError(f"{where}: {message}{hint}")

    def _read_events(self, response: httpx.Response, stream: Stream) -> Iterator[str]:
        """Parse SSE ``data:`` lines until ``[DONE]``; yield content deltas and record usage."""
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue  # blank separators, comments (": ping"), event/id fields
            data = line[len("data:") :].strip()
            if data == "[DONE]":
                return
            try:
                event = json.loads(data)
            except json.JSONDecodeError as exc:
                raise _Retryable(f"bad SSE data from {self.url}: {data[:200]!r}") from exc
            if event.get("error"):
                raise _Retryable(f"server error in stream: {_describe_error(event['error'])}")
            usage = event.get("usage")
            if usage:
                stream.prompt_tokens = usage.get("prompt_tokens", stream.prompt_tokens)
                stream.completion_tokens = usage.get("completion_tokens", stream.completion_tokens)
            for choice in event.get("choices") or []:
                text = (choice.get("delta") or {}).get("content")
                if text:
                    yield text


def _message_json(message: Message) -> dict:
    # Plain strings where there are no images: some servers only accept strings for system/assistant turns.
    if not message.images:
        return {"role": message.role, "content": message.text_content}
    parts = []
    for part in message.content:
        if isinstance(part, ImagePart):
            parts.append({"type": "image_url", "image_url": {"url": image_data_url(part)}})
        else:
            parts.append({"type": "text", "text": part})
    return {"role": message.role, "content": parts}


def image_data_url(image: ImagePart) -> str:
    data = image.to_png_bytes()
    return f"data:{_mime_type(data)};base64,{base64.b64encode(data).decode('ascii')}"


def _mime_type(data: bytes) -> str:
    if data.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if data.startswith(b"GIF8"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"


def _error_message(response: httpx.Response) -> str:
    try:
        payload = response.json()
    except ValueError:
        return response.text.strip()[:500] or "(empty body)"
    if isinstance(payload, dict):
        for key in ("error", "detail", "message"):
            if payload.get(key):
                return _describe_error(payload[key])
    return json.dumps(payload)[:500]


def _describe_error(error) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("msg") or json.dumps(error))[:500]
    return str(error)[:500]


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
