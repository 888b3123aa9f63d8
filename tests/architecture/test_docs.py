"""The documents stay true to the tree: README is a README, every link and every path they name resolves, the
configuration page lists every environment variable the settings read, and `make demo` takes the port it says."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md",
                    *(ROOT / "benchmarks" / "results").glob("*.md"), *(ROOT / "docs").rglob("*.md")])
# Directories of this repository: a `path` in backticks that starts with one of them must exist.
REPO_DIRS = ("annotate", "evaluation", "models_runtime", "tests", "benchmarks", "docker", "templates", "static",
             "locale", "docs")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\s]+)`")
ENV_READERS = {"env_str", "env_bool", "env_int", "env_list", "getenv"}


def without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)


def heading_anchors(path: Path) -> set[str]:
    """GitHub's anchors: lower case, punctuation dropped but hyphens and underscores, spaces to hyphens."""
    anchors = set()
    for line in without_code_blocks(path.read_text()).splitlines():
        if match := re.match(r"#{1,6}\s+(.*)", line):
            title = re.sub(r"[`*]", "", match.group(1).strip().lower())
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_readme_is_a_readme():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < 150, f"README.md has {len(lines)} lines: move the detail to docs/"


def test_links_in_readme_and_docs_resolve():
    broken = []
    for document in DOCUMENTS:
        for target in LINK.findall(without_code_blocks(document.read_text())):
            if re.match(r"[a-z]+:", target):  # http(s), mailto: not checked offline
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (document.parent / file_part).resolve() if file_part else document
            where = f"{document.relative_to(ROOT)} -> {target}"
            if not resolved.exists():
                broken.append(f"{where}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in heading_anchors(resolved):
                broken.append(f"{where}: no heading #{anchor}")
    assert not broken, "\n".join(broken)


def test_paths_the_documents_name_exist():
    """A module moved or renamed is a document to update: `annotate/...`, `tests/...` and the like must exist."""
    missing = []
    for document in DOCUMENTS:
        for span in CODE_SPAN.findall(document.read_text()):
            path = span.rstrip(".,:;")
            if path.split("/", 1)[0] in REPO_DIRS and "/" in path and not re.search(r"[<>*{}$]", path):
                if not (ROOT / path).exists():
                    missing.append(f"{document.relative_to(ROOT)}: `{span}`")
    assert not missing, "\n".join(missing)


def environment_variables_read(module_path: Path) -> set[str]:
    """Names passed as a literal to the strict env readers, os.getenv or os.environ.get / [...]."""
    names = set()
    for node in ast.walk(ast.parse(module_path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            environ_get = (name == "get" and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
                           and func.value.attr == "environ")
            if (name in ENV_READERS or environ_get) and node.args and isinstance(node.args[0], ast.Constant):
                names.add(node.args[0].value)
        elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
              and node.value.attr == "environ" and isinstance(node.slice, ast.Constant)):
            names.add(node.slice.value)
    return names


def test_configuration_page_lists_every_environment_variable_the_settings_read():
    spec = importlib.util.find_spec(os.environ["DJANGO_SETTINGS_MODULE"])
    assert spec is not None and spec.origin is not None
    read = environment_variables_read(Path(spec.origin))
    assert {"SECRET_KEY", "DATABASE_URL", "DEBUG"} <= read  # the scan does find the settings' reads
    gunicorn = environment_variables_read(Path(spec.origin).with_name("gunicorn.py"))  # the split deployment's
    assert {"WEB_HTTP_BIND", "WEB_HTTP_PROCESSES"} <= gunicorn
    read |= gunicorn
    page = (ROOT / "docs" / "operations" / "configuration.md").read_text()
    listed = set(re.findall(r"^\|[^|\n]*", page, flags=re.MULTILINE))
    documented = {name for row in listed for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row)}
    assert not read - documented, f"not in docs/operations/configuration.md's table: {sorted(read - documented)}"


def test_make_demo_serves_the_port_asked_for():
    dry_run = subprocess.run(["make", "-n", "demo", "PORT=8123"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout
    assert "manage.py run_demo --port 8123" in dry_run


# Words about the work on the project, not about the product: "the sixth session", "this session", "sessions ago".
# An annotation *session* is a product word and stays ("the session page", "an annotator's sessions").
WORK_SESSION = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th)) session\b"
    r"|\bthis session\b|\b(?:a|the) later session\b|\bearlier sessions?\b|\bwork sessions?\b|\bsessions? ago\b",
    re.IGNORECASE)
MANUAL = sorted({*DOCUMENTS, *(ROOT / "benchmarks").glob("*.md")})


def work_session_words(text: str) -> list[str]:
    return [match.group(0) for match in WORK_SESSION.finditer(text.replace("\n", " "))]


def test_the_check_tells_work_sessions_from_annotation_sessions():
    assert work_session_words("Measured in the sixth\nsession; this session; two sessions ago") == [
        "sixth session", "this session", "sessions ago"]
    assert work_session_words("The session page resumes an annotator's session; the same sessions on both sides; "
                              "sessions of the batch, session 3, the first round of a session") == []


def test_the_manual_says_nothing_about_work_sessions():
    """Docs describe the product as it is; dated runs live in benchmarks/results/ by date, not by work session."""
    found = [f"{document.relative_to(ROOT)}: {words}" for document in MANUAL
             if (words := work_session_words(document.read_text()))]
    assert not found, "\n".join(found)
