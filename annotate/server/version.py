"""The version of Feedback Lab that is running, read once at startup: the page footer, ``GET /api/``, every study
bundle and every export download carry it, so a paper can cite the version its study ran on.

Where it comes from: the ``pyproject.toml`` beside the code when there is one (a checkout, the Docker image), else
the installed package's metadata. The file first, because an editable install keeps the metadata of the day it
was installed: after a release bump, the metadata would still say the version before.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path
from typing import TypeVar

from django.http import HttpRequest, HttpResponseBase

DISTRIBUTION = "feedback-lab"
HEADER = "X-Feedback-Lab-Version"  # on every export download
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
Response = TypeVar("Response", bound=HttpResponseBase)


class VersionUnknown(RuntimeError):
    pass


def read_version(pyproject: Path = PYPROJECT) -> str:
    """The project's version from ``pyproject`` (when it exists and is this project's), else the installed
    metadata. Raises VersionUnknown naming both places when neither has it."""
    if pyproject.is_file():
        with pyproject.open("rb") as handle:
            try:
                project = tomllib.load(handle).get("project", {})
            except tomllib.TOMLDecodeError as error:
                raise VersionUnknown(f"{pyproject}: not valid TOML ({error})") from error
        if project.get("name") == DISTRIBUTION:
            version = project.get("version")
            if not isinstance(version, str) or not version.strip():
                raise VersionUnknown(f"{pyproject}: [project] has no version")
            return version.strip()
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError as error:
        raise VersionUnknown(f"no {pyproject} and no installed package {DISTRIBUTION!r}") from error


VERSION = read_version()


def version_context(request: HttpRequest) -> dict[str, str]:
    """Template context processor: ``feedback_lab_version`` for the footer."""
    return {"feedback_lab_version": VERSION}


def stamp(response: Response) -> Response:
    """Mark a download with the version that made it."""
    response[HEADER] = VERSION
    return response
