"""The schemas as the files docs/reference/schemas/<name>.json hold (and the API serves): one text per schema."""

from __future__ import annotations

import json
from pathlib import Path

from annotate.formats.schemas import SCHEMAS


def schema_text(name: str) -> str:
    return json.dumps(SCHEMAS[name], indent=2, ensure_ascii=False) + "\n"


def schema_files_write(folder: Path) -> list[Path]:
    """Write every schema into ``folder``; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SCHEMAS:
        path = folder / f"{name}.json"
        path.write_text(schema_text(name), encoding="utf-8")
        written.append(path)
    return written


def schema_files_stale(folder: Path) -> list[str]:
    """The file names in ``folder`` that differ from the schemas (missing, changed, or of no schema)."""
    stale = [f"{name}.json" for name in SCHEMAS
             if not (folder / f"{name}.json").is_file()
             or (folder / f"{name}.json").read_text(encoding="utf-8") != schema_text(name)]
    extra = sorted(p.name for p in folder.glob("*.json") if p.stem not in SCHEMAS) if folder.is_dir() else []
    return stale + extra
