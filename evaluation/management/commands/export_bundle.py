"""python manage.py export_bundle --batch NAME --out study.zip

The study bundle (evaluation/exports/bundle.py): every table and figure, the sessions and ratings, the instructions, the
prompts and the models' settings (no API keys), with a README. Written here and now, whatever its size.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotate.errors import ApplicationError
from evaluation.exports import bundle
from evaluation.interfeedback import selectors


class Command(BaseCommand):
    help = "Write a batch's study bundle (tables, figures, sessions, ratings, instructions, prompts, model " \
           "settings, README) as one zip."

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="Batch name")
        parser.add_argument("--out", required=True, help="The zip file to write")

    def handle(self, *args, batch: str, out: str, **options):
        try:
            found = selectors.batch_by_name(batch)
            with open(out, "wb") as handle:
                summary = bundle.bundle_write(found, handle)
        except ApplicationError as error:
            raise CommandError(error.message) from None
        except OSError as error:
            raise CommandError(f"--out: {error}") from None
        self.stderr.write(f"Wrote {out}: {len(summary.files)} files, {summary.sessions:,} sessions")
        for path, reason in summary.skipped.items():
            self.stderr.write(f"  not included: {path}: {reason}")
