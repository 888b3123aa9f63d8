"""The running version, read once from pyproject.toml (or the installed metadata): shown in the page footer, at
``GET /api/``, in every study bundle and on every export download, and named by a CHANGELOG.md section."""

from __future__ import annotations

import io
import json
import re
import tomllib
import zipfile
from pathlib import Path

import pytest

from annotate.server import version
from evaluation.exports import bundle
from tests.factories import ModelConfigFactory, make_batch

ROOT = Path(__file__).resolve().parents[3]
PYPROJECT_VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_version_is_pyprojects_and_a_release_of_the_changelog():
    assert version.VERSION == PYPROJECT_VERSION
    assert re.fullmatch(r"\d+\.\d+\.\d+", version.VERSION)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(version.VERSION)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)
    assert "## [Unreleased]" in changelog  # where the next release's entries gather


def test_read_version_takes_the_projects_pyproject(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "feedback-lab"\nversion = "2.3.4"\n')
    assert version.read_version(pyproject) == "2.3.4"


def test_read_version_falls_back_to_the_installed_metadata(tmp_path):
    # No file (an installed wheel), or another project's file: the package metadata answers.
    from importlib import metadata

    installed = metadata.version("feedback-lab")
    assert version.read_version(tmp_path / "missing.toml") == installed
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "something-else"\nversion = "9.9.9"\n')
    assert version.read_version(other) == installed


@pytest.mark.parametrize(("text", "message"), [
    ('[project]\nname = "feedback-lab"\n', "[project] has no version"),
    ('[project]\nname = "feedback-lab"\nversion = ""\n', "[project] has no version"),
    ("[project\n", "not valid TOML"),
])
def test_a_broken_pyproject_is_named_in_the_error(tmp_path, text, message):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(text)
    with pytest.raises(version.VersionUnknown) as error:
        version.read_version(pyproject)
    assert str(pyproject) in str(error.value) and message in str(error.value)


def test_every_page_shows_the_version_in_its_footer(client, researcher):
    page = client.get("/login/").content.decode()
    assert f'<footer class="site-footer">Feedback Lab {PYPROJECT_VERSION}</footer>' in page
    client.force_login(researcher)
    assert f"Feedback Lab {PYPROJECT_VERSION}</footer>" in client.get("/research/").content.decode()


def test_the_api_root_says_the_version_to_anyone(api_client):
    response = api_client.get("/api/")
    assert response.status_code == 200
    assert response.json() == {"name": "Feedback Lab", "version": PYPROJECT_VERSION, "schema": "/api/schema/",
                               "docs": "/api/docs/", "format_schemas": "/api/schema/formats/"}
    assert api_client.get(response.json()["schema"]).status_code == 200  # the addresses it gives answer


@pytest.fixture
def batch(researcher, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return make_batch(models=[ModelConfigFactory(name="sim")], tasks=1, members=[researcher])


@pytest.mark.django_db
def test_every_export_download_carries_the_version(api_client, researcher, batch):
    api_client.force_authenticate(researcher)
    for url in (f"/api/batches/{batch.id}/tables/accuracy.csv", f"/api/batches/{batch.id}/sessions.jsonl"):
        response = api_client.get(url)
        assert response.status_code == 200, url
        assert response["Content-Disposition"].startswith("attachment")
        assert response[version.HEADER] == PYPROJECT_VERSION, url


@pytest.mark.django_db
def test_the_study_bundle_records_the_version(batch):
    buffer = io.BytesIO()
    bundle.bundle_write(batch, buffer)
    archive = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    assert archive.comment.decode() == f"Feedback Lab {PYPROJECT_VERSION}"
    assert f"Made by Feedback Lab {PYPROJECT_VERSION} " in archive.read("README.md").decode()
    assert json.loads(archive.read("settings/models.json"))["feedback_lab_version"] == PYPROJECT_VERSION
