"""python manage.py participants --batch NAME [--json]
   [--approve ID ...] [--reject ID ... --reason TEXT] [--accept-suggestions] [--returned ID ...]

A batch's invited participants (evaluation.participants), as the page and /api/batches/<id>/participants/ show
them; the options first record decisions or returns, by platform id (e.g. a Prolific PID) or pseudonym. Files for
the platform: ``export_tables --batch NAME --table approvals --format txt`` (and bonuses csv, participants and
surveys csv|json).
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotate.errors import ApplicationError
from annotate.models import Batch, User
from evaluation.participants.apis import participants_api_rows
from evaluation.participants.selectors import participants_table
from evaluation.participants.services import (
    participants_decide,
    participants_mark_returned,
    suggestions_accept,
)


class Command(BaseCommand):
    help = "List a batch's invited participants; approve, reject or mark them returned."

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="batch name")
        parser.add_argument("--json", action="store_true", help="as the API returns them (with every decision)")
        parser.add_argument("--approve", nargs="+", default=[], metavar="ID", help="approve these participants")
        parser.add_argument("--reject", nargs="+", default=[], metavar="ID", help="reject these (with --reason)")
        parser.add_argument("--reason", default="", help="the reason of the decisions given")
        parser.add_argument("--by", help="the researcher's username, kept with each decision (the audit trail)")
        parser.add_argument("--accept-suggestions", action="store_true",
                            help="every undecided participant gets the suggested decision")
        parser.add_argument("--returned", nargs="+", default=[], metavar="ID",
                            help="the platform lists these as returned: end them and free their items")

    def handle(self, *args, **opts):
        batch = Batch.objects.filter(name=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"No batch named {opts['batch']!r}.")
        by = None
        if opts["by"]:
            by = User.objects.filter(username=opts["by"]).first()
            if by is None or not by.is_researcher_role:
                raise CommandError(f"--by: no researcher or admin named {opts['by']!r}.")
        decisions = [(pid, "approve", opts["reason"]) for pid in opts["approve"]]
        decisions += [(pid, "reject", opts["reason"]) for pid in opts["reject"]]
        try:
            if decisions:
                self.stderr.write(f"{participants_decide(batch=batch, decisions=decisions, by=by)} decision(s) "
                                  "recorded.")
            if opts["accept_suggestions"]:
                self.stderr.write(f"{suggestions_accept(batch=batch, by=by)} decision(s) recorded from the "
                                  "suggestions.")
            if opts["returned"]:
                self.stderr.write(f"{participants_mark_returned(batch=batch, ids=opts['returned'], by=by)} "
                                  "participant(s) marked as returned.")
        except ApplicationError as error:
            raise CommandError(error.message) from None
        if opts["json"]:
            self.stdout.write(json.dumps(participants_api_rows(batch), ensure_ascii=False, indent=2, default=str))
            return
        self.stdout.write(f"{'participant':<14} {'platform id':<26} {'state':<13} {'done':>5} {'attn':>6} "
                          f"{'suggested':<9} {'decision':<9} {'bonus':>8}")
        for row in participants_table(batch):
            attention = f"{row.quality.attention_failed}/{row.quality.attention_checks}" if row.quality else "0/0"
            self.stdout.write(f"{row.pseudonym:<14} {row.participant_id or '-':<26} {row.state:<13} "
                              f"{row.completed:>5} {attention:>6} {row.suggestion or '-':<9} {row.decided or '-':<9} "
                              f"{row.bonus:>8}")
