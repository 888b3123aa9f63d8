"""Checks on JSON that comes from outside (API bodies, WebSocket frames, settings typed into a form).

Two things the parsers let through and the server then trips over:
- nesting: ``json.loads`` recurses once per level, so ``[[[[...`` a thousand deep raises RecursionError (a 500).
  ``too_deep`` scans the raw text in one linear pass, before anything recurses.
- text a database cannot store: a NUL character (PostgreSQL refuses it in text and jsonb) or a lone surrogate
  (not encodable as UTF-8 at all). Both reach us only as ``\\u0000`` / ``\\ud800`` escapes; ``unstorable_text``
  names the first field that holds one.
"""

from __future__ import annotations

import re
from typing import Any

MAX_JSON_DEPTH = 64
DEPTH_MESSAGE = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"

# A whole JSON string (escapes included; an unterminated one runs to the end, as the parser would read it), an
# opening bracket, or a closing one. Possessive repeats: every byte is looked at once, whatever the input.
_TOKENS = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)|([\[{])|[\]}]', re.DOTALL)
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")


def too_deep(data: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether brackets outside strings nest deeper than ``limit`` (malformed text is left to the parser)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if data.count(b"[") + data.count(b"{") <= limit:
        return False  # nearly every body: it cannot nest deeper than it has brackets
    depth = 0
    for match in _TOKENS.finditer(data):
        if match.lastindex:  # an opening bracket
            depth += 1
            if depth > limit:
                return True
        elif data[match.start()] != 0x22:  # a closing bracket (a string starts with '"')
            depth -= 1
    return False


def _problem(char: str) -> str:
    if char == "\x00":
        return "contains a NUL character (\\u0000), which cannot be stored; remove it"
    return f"contains a lone surrogate (\\u{ord(char):04x}), which is not valid Unicode text; remove it"


def unstorable_text(value: Any, path: str = "") -> tuple[str, str] | None:
    """(field path such as ``ratings[2].comment``, what is wrong) for the first key or string in ``value`` that a
    database cannot store; None when all text is fine. Call it on parsed JSON (nesting already bounded)."""
    if isinstance(value, str):
        bad = _BAD_CHAR.search(value)
        return (path, _problem(bad.group())) if bad else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and (bad := _BAD_CHAR.search(key)):
                return (path or "(a key)", f"has a key that {_problem(bad.group())}")
            found = unstorable_text(item, where)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = unstorable_text(item, f"{path}[{index}]")
            if found:
                return found
    return None


def describe(found: tuple[str, str]) -> str:
    """One sentence for a person: ``Field 'feedback' contains a NUL character ...``."""
    path, message = found
    return f"Field {path!r} {message}." if path else f"The text {message}."
