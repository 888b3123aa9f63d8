"""python manage.py invite_link --batch NAME [--expires-days N] [--completion-code CODE] [--items-per-participant N]
                                [--base-url URL]

Prints a signed invite link for the batch, and the same link with Prolific's URL parameters.
"""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from annotate.crowd.services import batch_set_completion_code, invite_token_create
from annotate.errors import ApplicationError
from annotate.models import Batch

PROLIFIC_PARAMS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


class Command(BaseCommand):
    help = "Print a signed invite link for a batch (participants join as pseudonymous annotators)."

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="batch name")
        parser.add_argument("--expires-days", type=float, default=None, help="the link stops working after N days")
        parser.add_argument("--completion-code", default=None,
                            help="code shown to participants who finish (stored on the batch, not in the link)")
        parser.add_argument("--items-per-participant", type=int, default=None,
                            help="each participant gets at most N items, then the completion code (0: no limit)")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000", help="where the app is served")

    def handle(self, *args, **opts):
        batch = Batch.objects.filter(name=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"No batch named {opts['batch']!r}.")
        if opts["expires_days"] is not None and opts["expires_days"] <= 0:
            raise CommandError("--expires-days must be positive.")
        if opts["items_per_participant"] is not None:
            if opts["items_per_participant"] < 0:
                raise CommandError("--items-per-participant must be 0 (no limit) or more.")
            batch.items_per_participant = opts["items_per_participant"] or None
            batch.save(update_fields=["items_per_participant"])
        try:
            if opts["completion_code"] is not None:
                batch_set_completion_code(batch=batch, code=opts["completion_code"])
        except ApplicationError as error:
            raise CommandError(error.message) from None
        expires = timedelta(days=opts["expires_days"]) if opts["expires_days"] is not None else None
        token = invite_token_create(batch=batch, expires_in=expires)
        url = opts["base_url"].rstrip("/") + reverse("crowd-join", args=[token])
        self.stdout.write(url)
        self.stdout.write(f"Prolific study URL: {url}?{PROLIFIC_PARAMS}", style_func=None)
        if batch.items_per_participant:
            self.stdout.write(f"Items per participant: {batch.items_per_participant}")
        if batch.completion_code:
            self.stdout.write(f"Completion code: {batch.completion_code}")
        else:
            self.stdout.write("No completion code set (use --completion-code).")
        if batch.status != Batch.Status.READY:
            self.stderr.write(f"Warning: batch {batch.name!r} is {batch.status}; the link works only when it is ready.")
