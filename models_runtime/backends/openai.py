"""Any OpenAI-compatible ``/chat/completions`` server (vLLM, SGLang, TGI, Ollama, hosted APIs), streamed over SSE.

Settings:

- ``base_url``, e.g. ``http://127.0.0.1:8001/v1``; ``model`` (required): the served model name.
- ``api_key_env``: the NAME of an environment variable holding the key, ``<NAME>_API_KEY`` (models_runtime.outbound:
  no other variable of the worker can be sent). It is read at call time and never stored.
- ``endpoints`` (instead of ``base_url``): several servers of the same model (vLLM replicas, API keys, regions),
  ``[{"base_url": ..., "api_key_env": ...}, ...]`` (``api_key_env`` defaults to the one above). Calls go round
  robin over the endpoints that are up; one that fails with a retryable error is left out for
  ``endpoint_cooldown`` s (default 30) or its ``Retry-After``, and the call's retry goes at once to another one.
- ``connect_timeout`` (default 5 s), ``read_timeout`` (default 60 s, also the longest gap between chunks).
- Retries (models_runtime.retry, the only retry layer: Celery does not retry a model error again) on 429, 5xx,
  connection errors, timeouts and error events before the first chunk, never after it (a connection the server
  refused, or that timed out connecting, is retried until the budget is spent: a restarting server is waited for):
  ``max_retries`` (default 2, so 3 requests at most), ``retry_budget`` (default 60 s for all attempts of one call),
  ``backoff_base`` (default 0.5 s) and ``max_backoff`` (default 30 s) for exponential backoff with full jitter.
  A ``Retry-After`` is honoured (plus up to 20 % jitter); one longer than what is left of the budget ends the call.
- ``extra_body`` (dict): merged into the request body (a ``None`` value removes a key, e.g. ``stream_options``).

What a server answered is never put in an error (errors reach the researchers' pages, the Models API, probes): an
error names the URL, the status and what to check; the server's own message goes to the worker's log. Link-local and
cloud metadata hosts are refused, as written and as resolved before each request (models_runtime.outbound).

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
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
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
from models_runtime.outbound import api_key_env_problem, host_problem, resolved_host_problem
from models_runtime.retry import RetryPolicy

logger = logging.getLogger(__name__)

SETTINGS_KEYS = {
    "base_url",
    "endpoints",
    "endpoint_cooldown",
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
SEE_LOG = " (the server's message is in the worker's log)"

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


@dataclass
class Endpoint:
    """One server of the model; ``down_until`` (time.monotonic()) leaves it out after a retryable failure."""

    base_url: str
    api_key_env: str | None
    down_until: float = 0.0

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"


class EndpointPool:
    """Spreads a model's calls over its endpoints, round robin over those that are up. Shared by a worker's
    threads (one backend per model per process), hence the lock; each process keeps its own view of which
    endpoint is down, learnt from its own calls."""

    def __init__(self, endpoints: list[Endpoint], cooldown: float):
        self.endpoints = endpoints
        self.cooldown = cooldown
        self._next = 0
        self._lock = threading.Lock()

    def pick(self) -> Endpoint:
        """The next endpoint that is up; when none is, the one that comes back first."""
        with self._lock:
            now = time.monotonic()
            count = len(self.endpoints)
            for step in range(count):
                index = (self._next + step) % count
                if self.endpoints[index].down_until <= now:
                    self._next = (index + 1) % count
                    return self.endpoints[index]
            return min(self.endpoints, key=lambda endpoint: endpoint.down_until)

    def failed(self, endpoint: Endpoint, retry_after: float | None) -> bool:
        """Leave ``endpoint`` out for a while; True when another endpoint is up to take the retry now."""
        with self._lock:
            now = time.monotonic()
            endpoint.down_until = now + (retry_after if retry_after is not None else self.cooldown)
            return any(other.down_until <= now for other in self.endpoints if other is not endpoint)

    def succeeded(self, endpoint: Endpoint) -> None:
        with self._lock:
            endpoint.down_until = 0.0


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, settings: BackendSettings | None = None):
        super().__init__(settings)
        unknown = set(self.settings) - SETTINGS_KEYS
        if unknown:
            raise PermanentModelError(
                f"unknown openai setting(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(SETTINGS_KEYS))}"
            )
        if not self.settings.get("model"):
            raise PermanentModelError('openai backend needs a "model" setting')
        self.model = str(self.settings["model"])
        self.api_key_env = self.settings.get("api_key_env") or None
        self.pool = EndpointPool(_endpoints(self.settings, self.api_key_env), _cooldown(self.settings))
        self.base_url = self.pool.endpoints[0].base_url
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
        return self.pool.endpoints[0].url

    # -- request -------------------------------------------------------------------------------------------

    def _headers(self, endpoint: Endpoint) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if endpoint.api_key_env:
            key = os.environ.get(endpoint.api_key_env)
            if not key:
                raise PermanentModelError(
                    f"environment variable {endpoint.api_key_env} (api_key_env) is not set or empty; "
                    f"it should hold the API key for {endpoint.base_url}"
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
        """One HTTP request to one endpoint (Backend.stream retries). TransientModelError for what is worth
        another attempt; with another endpoint up, that attempt goes there without waiting."""
        endpoint = self.pool.pick()
        try:
            yield from self._request(endpoint, request, stream)
        except TransientModelError as error:
            if len(self.pool.endpoints) > 1 and self.pool.failed(endpoint, error.retry_after):
                raise TransientModelError(f"{error} (trying another endpoint)", unreached=error.unreached) from error
            raise
        self.pool.succeeded(endpoint)

    def _request(self, endpoint: Endpoint, request: ModelRequest, stream: Stream) -> Iterator[str]:
        url = endpoint.url
        refused = resolved_host_problem(url)
        if refused:
            raise PermanentModelError(f"{endpoint.base_url}: {refused}")
        body = self.body(request)
        headers = self._headers(endpoint)
        try:
            with self._client.stream("POST", url, json=body, headers=headers) as response:
                if response.status_code != 200:
                    self._raise_for_status(response, endpoint)
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if content_type == "text/event-stream":
                    yield from self._read_events(response, stream, url)
                elif content_type == "application/json":
                    yield self._read_completion(response, stream, url)
                else:
                    self._raise_for_content_type(response, content_type, url)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise PermanentModelError(f"{url}: bad URL: {exc}") from exc
        except httpx.ConnectTimeout as exc:
            raise TransientModelError(f"{url}: connection timed out (ConnectTimeout)", unreached=True) from exc
        except httpx.TimeoutException as exc:
            raise TransientModelError(f"{url}: timed out ({type(exc).__name__})") from exc
        except httpx.ConnectError as exc:  # refused, no route: the server never had the request
            raise TransientModelError(f"{url}: connection failed (ConnectError: {exc})", unreached=True) from exc
        except httpx.TransportError as exc:
            raise TransientModelError(f"{url}: connection failed ({type(exc).__name__}: {exc})") from exc

    def _raise_for_status(self, response: httpx.Response, endpoint: Endpoint) -> None:
        response.read()
        status = response.status_code
        where = f"{endpoint.url} answered {status} {response.reason_phrase}"
        logger.warning("%s: %s", where, _error_message(response))  # the server's words: the worker's log only
        if status in RETRY_STATUSES:
            raise TransientModelError(f"{where}{SEE_LOG}", retry_after=_retry_after(response))
        hint = {
            401: f" (check the API key in ${endpoint.api_key_env})"
            if endpoint.api_key_env
            else " (no api_key_env is set)",
            404: f" (is the model name {self.model!r} served there?)",
        }.get(status, "")
        raise PermanentModelError(f"{where}{hint}{SEE_LOG}")

    def _raise_for_content_type(self, response: httpx.Response, content_type: str, url: str) -> None:
        response.read()
        logger.warning("%s answered 200 with content type %r: %r", url, content_type, response.text.strip()[:200])
        raise PermanentModelError(
            f"{url} answered 200 with content type {content_type or '(none)'!r}, not text/event-stream "
            f"(streamed) or application/json (one completion): is base_url an OpenAI-compatible API?"
        )

    def _read_events(self, response: httpx.Response, stream: Stream, url: str) -> Iterator[str]:
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
                logger.warning("bad SSE data from %s: %r", url, data[:200])
                raise TransientModelError(f"bad SSE data from {url} (not JSON){SEE_LOG}") from exc
            if not isinstance(event, dict):
                logger.warning("bad SSE event from %s: %r", url, data[:200])
                raise TransientModelError(f"bad SSE event from {url} (not a JSON object){SEE_LOG}")
            if event.get("error"):
                logger.warning("%s: server error in stream: %s", url, _describe_error(event["error"]))
                raise TransientModelError(f"{url}: the server sent an error in the stream{SEE_LOG}")
            self._read_usage(event, stream)
            for choice in event.get("choices") or []:
                finish_reason = choice.get("finish_reason") or finish_reason
                text = (choice.get("delta") or {}).get("content")
                if text:
                    answered = True
                    yield text
        else:  # the body ended without [DONE]: complete only if the model said why it stopped
            if finish_reason is None:
                raise TransientModelError(f"{url}: the stream ended without [DONE] or a finish_reason")
        if not answered:
            raise self._empty(finish_reason, url)

    def _read_completion(self, response: httpx.Response, stream: Stream, url: str) -> str:
        """A plain ``chat.completion`` (a server that does not stream): its whole text as one chunk."""
        raw = response.read()
        try:
            payload = json.loads(raw)
        except ValueError as exc:
            logger.warning("bad JSON from %s: %r", url, raw[:200])
            raise TransientModelError(f"bad JSON from {url}{SEE_LOG}") from exc
        if not isinstance(payload, dict):
            logger.warning("unexpected JSON from %s: %r", url, raw[:200])
            raise TransientModelError(f"unexpected JSON from {url} (not an object){SEE_LOG}")
        if payload.get("error"):
            logger.warning("%s: server error: %s", url, _describe_error(payload["error"]))
            raise TransientModelError(f"{url}: the server answered with an error{SEE_LOG}")
        self._read_usage(payload, stream)
        choices = payload.get("choices") or [{}]
        text = _content_text((choices[0].get("message") or {}).get("content"))
        if not text:
            raise self._empty(choices[0].get("finish_reason"), url)
        return text

    def _read_usage(self, event: dict[str, Any], stream: Stream) -> None:
        usage = event.get("usage")
        if usage:
            stream.prompt_tokens = usage.get("prompt_tokens", stream.prompt_tokens)
            stream.completion_tokens = usage.get("completion_tokens", stream.completion_tokens)

    def _empty(self, finish_reason: str | None, url: str) -> EmptyAnswerError:
        hint = " (max_tokens was reached before any text)" if finish_reason == "length" else ""
        return EmptyAnswerError(
            f"{url}: the model {self.model!r} gave an empty answer (finish_reason={finish_reason!r}){hint}"
        )


def _endpoints(settings: BackendSettings, api_key_env: str | None) -> list[Endpoint]:
    """``base_url`` (one server) or ``endpoints`` (several), each checked: an http(s) URL, no trailing slash."""
    given = settings.get("endpoints")
    if settings.get("base_url") and given:
        raise PermanentModelError('openai settings: give "base_url" (one server) or "endpoints" (several), not both')
    if not given:
        if not settings.get("base_url"):
            raise PermanentModelError('openai backend needs a "base_url" setting (or "endpoints" for several)')
        given = [{"base_url": settings["base_url"]}]
    if not isinstance(given, list) or not all(isinstance(item, dict) for item in given):
        raise PermanentModelError('openai "endpoints" must be a list of {"base_url": ..., "api_key_env": ...}')
    endpoints = []
    for index, item in enumerate(given):
        unknown = set(item) - {"base_url", "api_key_env"}
        if unknown:
            raise PermanentModelError(f"openai endpoints[{index}]: unknown key(s) {', '.join(sorted(unknown))}; "
                                      "known: api_key_env, base_url")
        url = str(item.get("base_url") or "").rstrip("/")
        where = "base_url" if "endpoints" not in settings else f"endpoints[{index}].base_url"
        if not url.startswith(("http://", "https://")):
            raise PermanentModelError(f"openai {where} must start with http:// or https://, got {url!r}")
        refused = host_problem(url)
        if refused:
            raise PermanentModelError(f"openai {where}: {refused}")
        key_env = item.get("api_key_env") or api_key_env
        if key_env and (problem := api_key_env_problem(str(key_env))):
            key_where = "api_key_env" if not item.get("api_key_env") else f"endpoints[{index}].api_key_env"
            raise PermanentModelError(f"openai {key_where}: {problem}")
        endpoints.append(Endpoint(base_url=url, api_key_env=key_env))
    return endpoints


def _cooldown(settings: BackendSettings) -> float:
    try:
        cooldown = float(settings.get("endpoint_cooldown", 30))
    except (TypeError, ValueError) as exc:
        raise PermanentModelError(f"bad openai endpoint_cooldown: {exc}") from exc
    if cooldown < 0:
        raise PermanentModelError(f"openai endpoint_cooldown must be >= 0, got {cooldown:g}")
    return cooldown


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
