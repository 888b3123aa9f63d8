"""python manage.py recompute_outcomes --batch NAME: recount a batch's sessions now, in this process."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotate.errors import ApplicationError
from evaluation.interfeedback import selectors, services


class Command(BaseCommand):
    help = "Recount every completed session of a batch into the outcome counters (what the recompute job does)."

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="Batch name")

    def handle(self, *args, batch: str, **options):
        try:
            target = selectors.batch_by_name(batch)
        except ApplicationError as error:
            raise CommandError(error.message) from None
        report = services.outcome_recompute(batch_id=target.id)
        self.stdout.write(f"Counted {report['sessions']} sessions of {target.name!r} in {report['seconds']} s")
