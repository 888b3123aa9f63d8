"""Any OpenAI-compatible ``/chat/completions`` server (vLLM, SGLang, TGI, Ollama, hosted APIs), streamed over SSE.

Settings:

- ``base_url`` (required), e.g. ``http://127.0.0.1:8001/v1``; ``model`` (required): the served model name.
- ``api_key_env``: the NAME of an environment variable holding the key. It is read at call time and never stored.
- ``connect_timeout`` (default 5 s), ``read_timeout`` (default 60 s, also the longest gap between chunks).
- Retries (models_runtime.retry, the only retry layer: Celery does not retry a model error again) on 429, 5xx,
  connection errors, timeouts and error events before the first chunk, never after it:
  ``max_retries`` (default 2, so 3 requests at most), ``retry_budget`` (default 60 s for all attempts of one call),
  ``backoff_base`` (default 0.5 s) and ``max_backoff`` (default 30 s) for exponential backoff with full jitter.
  A ``Retry-After`` is honoured (plus up to 20 % jitter); one longer than what is left of the budget ends the call.
- ``extra_body`` (dict): merged into the request body (a ``None`` value removes a key, e.g. ``stream_options``).

A 200 is read by its content type: ``text/event-stream`` as SSE, ``application/json`` as a plain (non-streamed)
completion, given as one chunk (some servers ignore ``stream: true``); anything else is a PermanentModelError that
names it. An empty answer is an EmptyAnswerError, an error event or a stream cut off (no ``[DONE]``, no
``finish_reason``) after the first chunk a StreamBrokenError that keeps the text received.
"""

from __future__ import annotations

import base64
import datetime
import email.utils
import json
import os
from collections.abc import Iterator
from typing import Any, Literal, TypedDict

import httpx

from models_runtime.base import (
    Backend,
    BackendSettings,
    EmptyAnswerError,
    ImagePart,
    Message,
    ModelRequest,
    PermanentModelError,
    Stream,
    TransientModelError,
)
from models_runtime.retry import RetryPolicy

SETTINGS_KEYS = {
    "base_url",
    "model",
    "api_key_env",
    "connect_timeout",
    "read_timeout",
    "max_retries",
    "retry_budget",
    "backoff_base",
    "max_backoff",
    "extra_body",
}
RETRY_STATUSES = {429, 500, 502, 503, 504} | set(range(505, 600))

# The request body is JSON built from these plus ``extra_body`` (any keys the server takes).
RequestBody = dict[str, Any]


class _ImageUrl(TypedDict):
    url: str


class _ImagePartJson(TypedDict):
    type: Literal["image_url"]
    image_url: _ImageUrl


class _TextPartJson(TypedDict):
    type: Literal["text"]
    text: str


class ChatMessageJson(TypedDict):
    role: str
    content: str | list[_ImagePartJson | _TextPartJson]


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, settings: BackendSettings | None = None):
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
        self.retry_policy = _retry_policy(self.settings)
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

    def body(self, request: ModelRequest) -> RequestBody:
        settings = request.settings
        body: RequestBody = {
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
        """One HTTP request (Backend.stream retries). TransientModelError for what is worth another attempt."""
        body = self.body(request)
        headers = self._headers()
        try:
            with self._client.stream("POST", self.url, json=body, headers=headers) as response:
                if response.status_code != 200:
                    self._raise_for_status(response)
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if content_type == "text/event-stream":
                    yield from self._read_events(response, stream)
                elif content_type == "application/json":
                    yield self._read_completion(response, stream)
                else:
                    self._raise_for_content_type(response, content_type)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise PermanentModelError(f"{self.url}: bad URL: {exc}") from exc
        except httpx.TimeoutException as exc:
            raise TransientModelError(f"{self.url}: timed out ({type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            raise TransientModelError(f"{self.url}: connection failed ({type(exc).__name__}: {exc})") from exc

    def _raise_for_status(self, response: httpx.Response) -> None:
        response.read()
        status = response.status_code
        message = _error_message(response)
        where = f"{self.url} answered {status} {response.reason_phrase}"
        if status in RETRY_STATUSES:
            raise TransientModelError(f"{where}: {message}", retry_after=_retry_after(response))
        hint = {
            401: f" (check the API key in ${self.api_key_env})"
            if self.api_key_env
            else " (no api_key_env is set)",
            404: f" (is the model name {self.model!r} served there?)",
        }.get(status, "")
        raise PermanentModelError(f"{where}: {message}{hint}")

    def _raise_for_content_type(self, response: httpx.Response, content_type: str) -> None:
        response.read()
        excerpt = response.text.strip()[:200] or "(empty body)"
        raise PermanentModelError(
            f"{self.url} answered 200 with content type {content_type or '(none)'!r}, not text/event-stream "
            f"(streamed) or application/json (one completion): is base_url an OpenAI-compatible API? "
            f"The body begins: {excerpt!r}"
        )

    def _read_events(self, response: httpx.Response, stream: Stream) -> Iterator[str]:
        """Parse SSE ``data:`` lines until ``[DONE]``; yield content deltas and record usage."""
        finish_reason = None
        answered = False
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue  # blank separators, comments (": ping"), event/id fields
            data = line[len("data:") :].strip()
            if data == "[DONE]":
                break
            try:
                event = json.loads(data)
            except json.JSONDecodeError as exc:
                raise TransientModelError(f"bad SSE data from {self.url}: {data[:200]!r}") from exc
            if not isinstance(event, dict):
                raise TransientModelError(f"bad SSE event from {self.url}: {data[:200]!r}")
            if event.get("error"):
                raise TransientModelError(f"{self.url}: server error in stream: {_describe_error(event['error'])}")
            self._read_usage(event, stream)
            for choice in event.get("choices") or []:
                finish_reason = choice.get("finish_reason") or finish_reason
                text = (choice.get("delta") or {}).get("content")
                if text:
                    answered = True
                    yield text
        else:  # the body ended without [DONE]: complete only if the model said why it stopped
            if finish_reason is None:
                raise TransientModelError(f"{self.url}: the stream ended without [DONE] or a finish_reason")
        if not answered:
            raise self._empty(finish_reason)

    def _read_completion(self, response: httpx.Response, stream: Stream) -> str:
        """A plain ``chat.completion`` (a server that does not stream): its whole text as one chunk."""
        raw = response.read()
        try:
            payload = json.loads(raw)
        except ValueError as exc:
            raise TransientModelError(f"bad JSON from {self.url}: {raw[:200]!r}") from exc
        if not isinstance(payload, dict):
            raise TransientModelError(f"unexpected JSON from {self.url}: {raw[:200]!r}")
        if payload.get("error"):
            raise TransientModelError(f"{self.url}: server error: {_describe_error(payload['error'])}")
        self._read_usage(payload, stream)
        choices = payload.get("choices") or [{}]
        text = _content_text((choices[0].get("message") or {}).get("content"))
        if not text:
            raise self._empty(choices[0].get("finish_reason"))
        return text

    def _read_usage(self, event: dict[str, Any], stream: Stream) -> None:
        usage = event.get("usage")
        if usage:
            stream.prompt_tokens = usage.get("prompt_tokens", stream.prompt_tokens)
            stream.completion_tokens = usage.get("completion_tokens", stream.completion_tokens)

    def _empty(self, finish_reason: str | None) -> EmptyAnswerError:
        hint = " (max_tokens was reached before any text)" if finish_reason == "length" else ""
        return EmptyAnswerError(
            f"{self.url}: the model {self.model!r} gave an empty answer (finish_reason={finish_reason!r}){hint}"
        )


def _retry_policy(settings: BackendSettings) -> RetryPolicy:
    try:
        return RetryPolicy(
            max_attempts=int(settings.get("max_retries", 2)) + 1,
            base_delay=float(settings.get("backoff_base", 0.5)),
            max_delay=float(settings.get("max_backoff", 30)),
            total_seconds=float(settings.get("retry_budget", 60)),
        )
    except (TypeError, ValueError) as exc:
        raise PermanentModelError(f"bad openai retry setting: {exc}") from exc


def _content_text(content: object) -> str:
    """A message's ``content``: a string, or (some servers) a list of ``{"type": "text", "text": ...}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text") or "" for part in content if isinstance(part, dict))
    return ""


def _message_json(message: Message) -> ChatMessageJson:
    # Plain strings where there are no images: some servers only accept strings for system/assistant turns.
    if not message.images:
        return {"role": message.role, "content": message.text_content}
    parts: list[_ImagePartJson | _TextPartJson] = []
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


def _describe_error(error: object) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("msg") or json.dumps(error))[:500]
    return str(error)[:500]


def _retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds: delay-seconds or an HTTP date (RFC 9110 10.2.3); None when absent or unreadable."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())
