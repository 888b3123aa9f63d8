"""python manage.py study --batch NAME [--set FILE.json]

A batch's study settings for invited participants (consent, screening, attention checks, questionnaires, time
limit, bonus rule: annotate.crowd.study), printed as the JSON document the API returns; ``--set`` first changes the
keys the file gives (the others keep their value). Nothing is written when anything in the file is wrong.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotate.crowd.study import study_document, study_update
from annotate.errors import ApplicationError
from annotate.models import Batch


class Command(BaseCommand):
    help = "Show (and with --set change) a batch's study settings for invited participants."

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="batch name")
        parser.add_argument("--set", dest="path", help="a JSON file of study settings to change")

    def handle(self, *args, **opts):
        batch = Batch.objects.filter(name=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"No batch named {opts['batch']!r}.")
        if opts["path"]:
            try:
                settings = json.loads(Path(opts["path"]).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as error:
                raise CommandError(f"--set: {error}") from None
            try:
                study_update(batch=batch, settings=settings)
            except ApplicationError as error:
                raise CommandError(error.message) from None
        self.stdout.write(json.dumps(study_document(batch), ensure_ascii=False, indent=2))
