"""python manage.py export_batch --batch NAME --out FILE.zip — our zip (tasks.jsonl + images/), re-importable."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotate.errors import ApplicationError
from annotate.imports.export import batch_export_interfeedback
from annotate.models import Batch


class Command(BaseCommand):
    help = "Export an InterFeedback batch as tasks.jsonl + images/ in a zip (the import format)."

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="batch name")
        parser.add_argument("--out", required=True, help="the zip file to write")

    def handle(self, *args, **opts):
        batch = Batch.objects.filter(name=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"No batch named {opts['batch']!r}.")
        if batch.kind == Batch.Kind.PREFERENCE:
            raise CommandError(
                f"Batch {batch.name!r} is a preference batch; this command writes InterFeedback tasks. Its judgments: "
                f"export_tables --batch {batch.name} --table preference-responses --format jsonl (or csv), "
                f"--table preference-dpo --format jsonl; everything at once: export_bundle --batch {batch.name}.")
        try:
            result = batch_export_interfeedback(batch=batch, path=opts["out"])
        except ApplicationError as error:
            raise CommandError(error.message) from None
        self.stdout.write(f"Wrote {result['tasks']} tasks and {result['images']} images to {result['path']}.")
