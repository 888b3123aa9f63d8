"""Markdown written by researchers (batch instructions), rendered for annotators' pages.

markdown-it-py's CommonMark with raw HTML turned off: tags in the text are shown as text, and its link check
refuses javascript:, vbscript: and file: URLs, so a batch's instructions cannot run script in an annotator's page.
"""

from __future__ import annotations

from functools import lru_cache

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


@lru_cache(maxsize=256)
def markdown_to_html(text: str) -> SafeString:
    return mark_safe(_parser().render(text or ""))  # noqa: S308 - raw HTML is off: the output is escaped markup
