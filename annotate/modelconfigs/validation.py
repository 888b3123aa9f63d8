"""Checks of a model config before it is saved: every problem at once, each naming its field and key.

The backends check their own settings when they are built (models_runtime/backends/*: unknown keys, required keys,
allowed values), and that is the final word: a config's settings are handed to its backend's constructor here,
except for ``transformers``, whose constructor loads the checkpoint (minutes, on the GPU box, never in a web
request). So the table below states the keys and value types of each backend, and
tests/annotate/modelconfigs/test_validation.py fails when it and the backends' own ``SETTINGS_KEYS`` drift apart.

API keys are never stored: ``api_key_env`` holds the NAME of an environment variable, and a value that looks
like a key (anywhere in the settings) is refused. That variable's value is sent to the model's server, so it must
be one meant for a model key (``<NAME>_API_KEY``, models_runtime.outbound) and never one of the app's own settings.
Link-local and cloud metadata hosts are refused as model servers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from annotate.models import ModelConfig
from annotate.server.env import SETTINGS_NAMES
from models_runtime import GenerationSettings, ModelError
from models_runtime.outbound import API_KEY_ENV_RULE, api_key_env_problem, host_problem
from models_runtime.registry import backend_class

Problems = list[tuple[str, str]]

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
QUEUE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# Prefixes of the API keys people paste most (OpenAI, Anthropic, Hugging Face, Groq, Google, xAI, GitHub, Slack).
KEY_PREFIXES = ("sk-", "sk_", "pk-", "rk-", "hf_", "gsk_", "aiza", "xai-", "ghp_", "github_pat_", "xox", "bearer ")
MAX_NEW_TOKENS_LIMIT = 32768
DISPLAY_NAME_MAX = 128
_INFINITE = (float("inf"), float("-inf"))


def looks_like_a_key(value: str) -> bool:
    """A secret rather than the name of an environment variable: a known key prefix, or a long random-looking
    token (env var names are words joined by underscores, e.g. OPENAI_API_KEY)."""
    text = value.strip()
    if text.lower().startswith(KEY_PREFIXES):
        return True
    if len(text) >= 20 and any(c.isdigit() for c in text) and any(c.islower() for c in text) \
            and any(c.isupper() for c in text):
        return True
    return len(text) >= 32 and "_" not in text


# --- value checks: each returns a problem (str) or None ----------------------------------------------------------

def _number(minimum: float = 0, *, above: bool = False) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value in _INFINITE:
            return f"must be a number, got {value!r}"
        if value < minimum or (above and value == minimum):
            return f"must be {'above' if above else 'at least'} {minimum:g}, got {value!r}"
        return None
    return check


def _integer(minimum: int = 0, maximum: int | None = None) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be a whole number, got {value!r}"
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and at most {maximum}" if maximum is not None else ""
            return f"must be at least {minimum}{upper}, got {value!r}"
        return None
    return check


def _text(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return f"must be a non-empty string, got {value!r}"
    return None


def _one_of(*choices: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(map(repr, choices))}, got {value!r}"
    return check


def _http_url(value: Any) -> str | None:
    if _text(value) or not str(value).startswith(("http://", "https://")):
        return f"must be a URL starting with http:// or https://, got {value!r}"
    return host_problem(str(value))


def _env_name(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"must be the NAME of an environment variable, got {value!r}"
    if looks_like_a_key(value):
        return ("looks like an API key: store only the NAME of an environment variable that holds it "
                "(e.g. OPENAI_API_KEY), and set that variable on the workers")
    if not ENV_NAME_PATTERN.match(value):
        return f"must be the NAME of an environment variable (letters, digits and _), got {value!r}"
    if value in SETTINGS_NAMES:
        return f"{value!r} is one of the app's own settings, never a model key; {API_KEY_ENV_RULE}"
    return api_key_env_problem(value)


def _local_path(value: Any) -> str | None:
    if _text(value) or not str(value).startswith("/"):
        return (f"must be an absolute path to a local checkpoint directory (nothing is downloaded), "
                f"got {value!r}")
    return None


def _device(value: Any) -> str | None:
    if isinstance(value, str) and (value in ("auto", "cpu", "cuda") or re.fullmatch(r"cuda:\d+", value)):
        return None
    return f'must be "auto", "cpu", "cuda" or "cuda:N", got {value!r}'


def _endpoint_list(value: Any) -> str | None:
    if not isinstance(value, list) or not value or not all(isinstance(item, dict) for item in value):
        return f'must be a list of {{"base_url": ..., "api_key_env": ...}}, got {value!r}'
    for index, item in enumerate(value):
        unknown = set(item) - {"base_url", "api_key_env"}
        problem = (f"unknown key(s) {', '.join(sorted(unknown))}; known: api_key_env, base_url" if unknown
                   else _http_url(item.get("base_url")) or (
                       _env_name(item["api_key_env"]) if item.get("api_key_env") is not None else None))
        if problem:
            return f"endpoint {index + 1}: {problem}"
    return None


def _switch(value: Any) -> str | None:
    return None if value == "auto" or isinstance(value, bool) else f'must be true, false or "auto", got {value!r}'


def _sizes(minimum: int) -> Callable[[Any], str | None]:
    item_problem = _integer(minimum)

    def check(value: Any) -> str | None:
        if not isinstance(value, list) or not value or any(item_problem(item) for item in value):
            return f"must be a non-empty list of whole numbers of at least {minimum}, got {value!r}"
        return None
    return check


def _dict(value: Any) -> str | None:
    return None if isinstance(value, dict) else f"must be an object, got {value!r}"


# Each backend's keys: (check, required). Keep in step with SETTINGS_KEYS of models_runtime/backends/<name>.py.
BACKEND_SETTINGS: dict[str, dict[str, tuple[Callable[[Any], str | None], bool]]] = {
    "simulated": {
        "correct_from_round": (_integer(0), False),
        "chunk_delay": (_number(0), False),
        "fail": (_one_of("permanent"), False),
        "fail_transient_times": (_integer(0), False),
    },
    "replay": {"chunk_delay": (_number(0), False)},
    "openai": {
        "base_url": (_http_url, False),  # or "endpoints": one of the two (the backend's own check says so)
        "endpoints": (_endpoint_list, False),
        "endpoint_cooldown": (_number(0), False),
        "model": (_text, True),
        "api_key_env": (_env_name, False),
        "connect_timeout": (_number(0, above=True), False),
        "read_timeout": (_number(0, above=True), False),
        "max_retries": (_integer(0), False),
        "backoff_base": (_number(0), False),
        "max_backoff": (_number(0), False),
        "retry_budget": (_number(0, above=True), False),
        "extra_body": (_dict, False),
    },
    "transformers": {
        "path": (_local_path, True),
        "device": (_device, False),
        "dtype": (_one_of("auto", "bfloat16", "float16", "float32"), False),
        "max_batch_size": (_integer(1), False),
        "batch_wait_ms": (_number(0), False),
        "batch_slice_tokens": (_integer(0), False),
        "compiled_decoding": (_switch, False),
        "compile_batch_sizes": (_sizes(1), False),
        "compile_cache_lengths": (_sizes(16), False),
        "compile_backend": (_text, False),
    },
}
# Backends whose constructor only checks its settings (no model load, no network): built once as a last check.
CHEAP_TO_BUILD = {"simulated", "replay", "openai"}

GENERATION: dict[str, Callable[[Any], str | None]] = {
    "max_new_tokens": _integer(1, MAX_NEW_TOKENS_LIMIT),
    "temperature": _number(0),
    "top_p": _number(0, above=True),
    "seed": lambda v: None if v is None else _integer(0)(v),
    "stop": lambda v: None if isinstance(v, list) and all(isinstance(s, str) and s for s in v)
    else f"must be a list of non-empty strings, got {v!r}",
}


def backend_settings_problems(backend: str, settings: Any) -> Problems:
    field = "backend_settings"
    if not isinstance(settings, dict):
        return [(field, f"must be an object of settings, got {settings!r}")]
    schema = BACKEND_SETTINGS.get(backend)
    if schema is None:
        return []  # the backend itself is reported
    problems: Problems = _secrets_in(settings, field)
    flagged = {where for where, _ in problems}
    for key in sorted(set(settings) - set(schema)):
        if f"{field}.{key}" not in flagged:
            known = ", ".join(sorted(schema))
            problems.append((f"{field}.{key}", f"unknown {backend} setting; known: {known}"))
    for key, (check, required) in schema.items():
        if key not in settings or settings[key] is None:
            if required:
                problems.append((f"{field}.{key}", f"required for the {backend} backend"))
            continue
        problem = check(settings[key])
        if problem:
            problems.append((f"{field}.{key}", problem))
    if backend == "openai" and not settings.get("base_url") and not settings.get("endpoints"):
        problems.append((f"{field}.base_url", "required for the openai backend (or endpoints, for several servers)"))
    if problems or backend not in CHEAP_TO_BUILD:
        return problems
    try:
        backend_class(backend)(dict(settings)).close()
    except (ModelError, TypeError, ValueError) as error:  # the backend's own word, when the table missed it
        problems.append((field, str(error)))
    return problems


def _an_api_key_env(where: str) -> bool:
    """The settings' own api_key_env, or an endpoint's: checked by _env_name, which also refuses a key there."""
    return where == "backend_settings.api_key_env" or (
        where.startswith("backend_settings.endpoints[") and where.endswith("].api_key_env"))


def _secrets_in(settings: Mapping[str, Any], path: str) -> Problems:
    """A key pasted anywhere in the settings (other than api_key_env, checked by its own rule)."""
    found: Problems = []
    for key, value in settings.items():
        where = f"{path}.{key}"
        if isinstance(value, dict):
            found += _secrets_in(value, where)
        elif isinstance(value, list):  # e.g. endpoints: [{"base_url": ..., "api_key_env": ...}]
            for index, item in enumerate(value):
                found += _secrets_in(item, f"{where}[{index}]") if isinstance(item, dict) else []
        elif not _an_api_key_env(where) and isinstance(value, str) and (
                value.lower().startswith(KEY_PREFIXES) or "key" in key.lower() and "env" not in key.lower()):
            found.append((where, "looks like an API key: never store a key in a model config; put it in an "
                                 "environment variable on the workers and give its NAME as api_key_env"))
    return found


def generation_problems(generation: Any) -> Problems:
    field = "generation"
    if not isinstance(generation, dict):
        return [(field, f"must be an object of generation settings, got {generation!r}")]
    problems: Problems = []
    for key in sorted(set(generation) - set(GENERATION)):
        problems.append((f"{field}.{key}", f"unknown generation setting; known: {', '.join(GENERATION)}"))
    for key, check in GENERATION.items():
        if key in generation:
            problem = check(generation[key])
            if problem:
                problems.append((f"{field}.{key}", problem))
    if not problems:
        try:
            GenerationSettings.from_dict(generation)  # what the workers will build from it
        except (ModelError, TypeError) as error:
            problems.append((field, str(error)))
    return problems


def model_config_problems(*, values: Mapping[str, Any], creating: bool) -> Problems:
    """Problems of the fields in ``values`` (all of a new config's fields, or the changed ones of an edit)."""
    problems: Problems = []
    if "name" in values:
        name = values["name"]
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            problems.append(("name", "must be 1-64 lower-case letters, digits, - or _ (it is used in URLs, queue "
                                     f"names and exports), got {name!r}"))
        elif creating and ModelConfig.objects.filter(name=name).exists():
            problems.append(("name", f"a model named {name!r} already exists (retired ones too: edit it instead)"))
    if "display_name" in values:
        display = values["display_name"]
        if not isinstance(display, str) or len(display) > DISPLAY_NAME_MAX or display != display.strip():
            problems.append(("display_name", f"must be text of at most {DISPLAY_NAME_MAX} characters with no "
                                             f"leading or trailing spaces, got {display!r}"))
    backend = values.get("backend")
    if "backend" in values and backend not in ModelConfig.Backend.values:
        problems.append(("backend", f"unknown backend {backend!r}; known: {', '.join(ModelConfig.Backend.values)}"))
    elif "backend_settings" in values:
        problems += backend_settings_problems(backend, values["backend_settings"])
    if "generation" in values:
        problems += generation_problems(values["generation"])
    if "queue" in values:
        queue = values["queue"]
        if not isinstance(queue, str) or (queue and not QUEUE_PATTERN.match(queue)):
            problems.append(("queue", "must be empty (model.<backend>) or a queue name of letters, digits, ., - "
                                      f"and _, got {queue!r}"))
    for key in ("soft_time_limit", "time_limit"):
        if key in values:
            problem = _integer(1, 86400)(values[key])
            if problem:
                problems.append((key, f"(seconds) {problem}"))
    soft, hard = values.get("soft_time_limit"), values.get("time_limit")
    if isinstance(soft, int) and isinstance(hard, int) and not problems and hard <= soft:
        problems.append(("time_limit", f"must be above soft_time_limit ({soft} s), so the task can end cleanly "
                                       f"first; got {hard} s"))
    for key in ("input_price_per_million", "output_price_per_million"):
        price = values.get(key)
        if price is not None and (not isinstance(price, (int, float, Decimal)) or isinstance(price, bool)
                                  or not 0 <= price <= 1_000_000):
            problems.append((key, f"must be empty or a price from 0 to 1,000,000 per million tokens, got {price!r}"))
    for key in ("max_concurrent_requests", "requests_per_minute", "tokens_per_minute"):
        limit = values.get(key)
        if limit is not None and (_integer(1, 100_000_000)(limit)):
            problems.append((key, f"must be empty (no limit) or a whole number from 1 to 100,000,000, got {limit!r}"))
    if "is_active" in values and not isinstance(values["is_active"], bool):
        problems.append(("is_active", f"must be true or false, got {values['is_active']!r}"))
    return problems
