"""python manage.py format_schemas [--check] [--to FOLDER]: write the file formats' JSON Schemas into
docs/reference/schemas/ (the copies the documentation links to), or check that the copies match the code."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotate.formats.files import schema_files_stale, schema_files_write


class Command(BaseCommand):
    help = "Write (or --check) the file formats' JSON Schemas in docs/reference/schemas/."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="exit non-zero when a copy differs; write nothing")
        parser.add_argument("--to", help="the folder (default: docs/reference/schemas/ of the repository)")

    def handle(self, *args, **opts):
        folder = Path(opts["to"]) if opts["to"] else Path(settings.BASE_DIR) / "docs" / "reference" / "schemas"
        if opts["check"]:
            stale = schema_files_stale(folder)
            if stale:
                raise CommandError(f"{folder}: {', '.join(stale)} differ from the code; run manage.py format_schemas")
            self.stdout.write(f"{folder}: every schema matches the code.")
            return
        for path in schema_files_write(folder):
            self.stdout.write(str(path))
