"""The product cites only itself: no code comment, template, doc or benchmark points at an internal specification
("SPEC §3 item 9"); it says what is meant or links the docs page that says it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLACES = ("annotate", "evaluation", "models_runtime", "templates", "static", "docs", "tests", "benchmarks")
SUFFIXES = {".py", ".html", ".js", ".css", ".md", ".txt", ".json", ".po"}
SKIPPED_DIRS = {"__pycache__", "out", "node_modules", "vendor"}
# The word alone, in capitals: drf-spectacular's SPECTACULAR_SETTINGS (a name the library reads) is not a citation.
CITATION = re.compile(r"\bSPEC\b")


def product_files():
    yield ROOT / "README.md"
    yield ROOT / "CHANGELOG.md"
    for place in PLACES:
        for path in (ROOT / place).rglob("*"):
            if path.suffix in SUFFIXES and path.is_file() and not SKIPPED_DIRS & set(path.relative_to(ROOT).parts):
                yield path


def test_nothing_cites_an_internal_specification():
    this_file = Path(__file__).resolve()
    cited = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in product_files() if path.resolve() != this_file
             for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
             if CITATION.search(line)]
    assert not cited, "\n".join(cited)
