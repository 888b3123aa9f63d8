"""Where an import reads its files from: a zip archive (checked before anything is read) or a directory.

Zip safety: every entry is checked even if it is never used — no absolute paths, no ``..``, no symlinks, no
encryption, a cap on the number of entries and on their declared total size, and reads that stop at a cap whatever
the header says (a lying header cannot make us inflate a bomb).
"""

from __future__ import annotations

import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from django.conf import settings


@dataclass
class Limits:
    max_zip_entries: int = 200_000
    max_zip_total_bytes: int = 4 * 1024**3
    max_text_bytes: int = 1024**3  # the records file itself (tasks.jsonl, rows, FIRE JSON), read as a stream
    max_line_bytes: int = 1024**2  # one JSON Lines record (or CSV field)
    max_lines: int = 1_000_000  # lines of the records file, blank ones included (a zip of newlines stops here)
    max_records: int = 1_000_000
    max_reported_problems: int = 500
    remote_timeout_s: float = 10.0


LIMITS = Limits()  # tests shrink these with monkeypatch.setattr

_DRIVE = re.compile(r"^[A-Za-z]:")
_IGNORED = ("__MACOSX/",)  # resource forks added by the macOS archiver


class SourceError(Exception):
    """A file that cannot be read; the message says why and is shown to the admin as is."""


def check_relative_path(name: str) -> str | None:
    """None if ``name`` is a safe relative path, else what is wrong with it."""
    if name and ".." not in name and "\\" not in name and "\x00" not in name and name[0] != "/" and \
            name[1:2] != ":" and not name.isspace():
        return None  # the common case, without the regular expressions below
    if not name or not name.strip():
        return "the path is empty"
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return f"{name!r} is an absolute path; only paths relative to the archive are allowed"
    if "\x00" in name:
        return f"{name!r} contains a NUL byte"
    parts = re.split(r"[\\/]+", name)
    if ".." in parts:
        return f"{name!r} contains '..'; paths may not leave the archive"
    return None


def _normal(name: str) -> str:
    name = name.replace("\\", "/")
    while name.startswith("./"):
        name = name[2:]
    return str(PurePosixPath(name)) if name else name


class Source:
    """Read-only access to named files, each read capped at ``max_bytes``."""

    label = "input"

    def names(self) -> list[str]:
        raise NotImplementedError

    def has(self, name: str) -> bool:
        raise NotImplementedError

    def read(self, name: str, *, max_bytes: int) -> bytes:
        raise NotImplementedError

    def open(self, name: str) -> IO[bytes]:
        """The file as a binary stream (the records file, read a chunk at a time); the caller closes it."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class ZipSource(Source):
    def __init__(self, path: Path, archive: zipfile.ZipFile, entries: dict[str, zipfile.ZipInfo], root: str = ""):
        self.path, self.archive, self.entries, self.root = path, archive, entries, root
        self.label = path.name

    def names(self) -> list[str]:
        return [name[len(self.root):] for name in self.entries if name.startswith(self.root)]

    def has(self, name: str) -> bool:
        return self.root + _normal(name) in self.entries

    def read(self, name: str, *, max_bytes: int) -> bytes:
        info = self.entries.get(self.root + _normal(name))
        if info is None:
            raise SourceError(f"{name!r} is not in the zip")
        if info.file_size > max_bytes:
            raise SourceError(f"{name!r} is {info.file_size:,} bytes; at most {max_bytes:,} are allowed")
        try:
            with self.archive.open(info) as stream:
                data = stream.read(max_bytes + 1)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as error:
            raise SourceError(f"{name!r} cannot be read from the zip ({error})") from None
        if len(data) > max_bytes:
            raise SourceError(f"{name!r} inflates past {max_bytes:,} bytes (its header says {info.file_size:,})")
        return data

    def open(self, name: str) -> IO[bytes]:
        info = self.entries.get(self.root + _normal(name))
        if info is None:
            raise SourceError(f"{name!r} is not in the zip")
        if info.file_size > LIMITS.max_text_bytes:
            raise SourceError(f"{name!r} is {info.file_size:,} bytes; at most {LIMITS.max_text_bytes:,} are allowed")
        try:
            return self.archive.open(info)  # inflates no more than the header's size, checked above
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as error:
            raise SourceError(f"{name!r} cannot be read from the zip ({error})") from None

    def use_root_of(self, filename: str) -> bool:
        """Accept a zip of a folder (``batch/tasks.jsonl``): use that folder as the root when it is the only one."""
        if filename in self.entries:
            return True
        found = [name for name in self.entries if name.endswith("/" + filename) and name.count("/") == 1]
        if len(found) == 1:
            self.root = found[0][: -len(filename)]
            return True
        return False

    def close(self) -> None:
        self.archive.close()


class DirSource(Source):
    """Files next to the records file (or in an images directory given to the command)."""

    def __init__(self, base: Path):
        self.base = base.resolve()
        self.label = str(base)

    def names(self) -> list[str]:
        return [str(p.relative_to(self.base)) for p in self.base.rglob("*") if p.is_file()]

    def _path(self, name: str) -> Path:
        problem = check_relative_path(name)
        if problem:
            raise SourceError(problem)
        path = (self.base / name).resolve()
        if not path.is_relative_to(self.base):
            raise SourceError(f"{name!r} points outside {self.base}")
        return path

    def has(self, name: str) -> bool:
        try:
            return self._path(name).is_file()
        except SourceError:
            return False

    def read(self, name: str, *, max_bytes: int) -> bytes:
        path = self._path(name)
        if not path.is_file():
            raise SourceError(f"{name!r} does not exist in {self.label}")
        size = path.stat().st_size
        if size > max_bytes:
            raise SourceError(f"{name!r} is {size:,} bytes; at most {max_bytes:,} are allowed")
        return path.read_bytes()

    def open(self, name: str) -> IO[bytes]:
        path = self._path(name)
        if not path.is_file():
            raise SourceError(f"{name!r} does not exist in {self.label}")
        return path.open("rb")


def _check_zip(archive: zipfile.ZipFile, report) -> dict[str, zipfile.ZipInfo] | None:
    infos = archive.infolist()
    if len(infos) > LIMITS.max_zip_entries:
        report.add(None, None, f"the zip has {len(infos):,} entries; at most {LIMITS.max_zip_entries:,} are allowed")
        return None
    entries: dict[str, zipfile.ZipInfo] = {}
    total, ok = 0, True
    for info in infos:
        name = info.filename
        problem = check_relative_path(name)
        if problem:
            report.add(None, f"zip entry {name!r}", f"unsafe entry: {problem}")
            ok = False
            continue
        if name.startswith(_IGNORED) or info.is_dir():
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            report.add(None, f"zip entry {name!r}", "unsafe entry: symbolic links are not allowed in the zip")
            ok = False
            continue
        if info.flag_bits & 0x1:
            report.add(None, f"zip entry {name!r}", "the entry is encrypted; upload an unencrypted zip")
            ok = False
            continue
        total += info.file_size
        entries[_normal(name)] = info
    if total > LIMITS.max_zip_total_bytes:
        report.add(None, None, f"the zip would inflate to {total:,} bytes; at most {LIMITS.max_zip_total_bytes:,} "
                   "are allowed")
        ok = False
    return entries if ok else None


def open_source(path: Path, report, *, images_dir: Path | None = None) -> Source | None:
    """A zip (checked entry by entry) or the directory holding ``path``; problems go to the report."""
    if not path.exists():
        report.add(None, None, f"{path} does not exist")
        return None
    if path.is_dir():
        return DirSource(path)
    if zipfile.is_zipfile(path):
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as error:
            report.add(None, None, f"the zip cannot be opened ({error})")
            return None
        entries = _check_zip(archive, report)
        if entries is None:
            archive.close()
            return None
        return ZipSource(path, archive, entries)
    if path.suffix.lower() == ".zip":
        report.add(None, None, f"{path.name} is not a valid zip archive (truncated or corrupt?)")
        return None
    return DirSource(images_dir or path.parent)


def fetch_remote_image(url: str, *, max_bytes: int) -> bytes:
    """Download an image when an admin allowed remote images (settings.ALLOW_REMOTE_IMAGES)."""
    if not settings.ALLOW_REMOTE_IMAGES:
        raise SourceError("http(s) image URLs are refused (ALLOW_REMOTE_IMAGES is off); put the image in the zip")
    import httpx

    try:
        with httpx.stream("GET", url, timeout=LIMITS.remote_timeout_s, follow_redirects=True) as response:
            if response.status_code != 200:
                raise SourceError(f"{url} answered HTTP {response.status_code}")
            data = bytearray()
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > max_bytes:
                    raise SourceError(f"{url} is larger than {max_bytes:,} bytes")
            return bytes(data)
    except httpx.HTTPError as error:
        raise SourceError(f"{url} could not be fetched ({error})") from None
