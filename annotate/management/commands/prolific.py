"""python manage.py prolific check
   python manage.py prolific create --batch NAME --name TITLE --description TEXT --minutes N --reward 2.50
                                    [--internal-name TEXT] [--places N] [--attention-code CODE] [--base-url URL]
   python manage.py prolific publish|pause|resume|stop|show|sync --batch NAME
   python manage.py prolific add-places --batch NAME N
   python manage.py prolific approve --batch NAME [--participant PID ...] [--dry-run]
   python manage.py prolific reject --batch NAME --participant PID --category CAT --message TEXT [--dry-run]
   python manage.py prolific bonus --batch NAME [--dry-run]

A batch's Prolific study from the command line, over the same services as the invites and participants pages'
Prolific panels and /api/batches/<id>/prolific/ (annotate.prolific). Each subcommand prints sentences; ``--json``
prints the JSON the API answers instead. ``approve`` without ``--participant`` approves on Prolific the participants
approved in the app. The API token comes from the environment variable the settings name (PROLIFIC_TOKEN_ENV).
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.crowd.decisions import latest_decisions
from annotate.errors import ApplicationError
from annotate.models import Batch, ProlificStudy
from annotate.prolific import payments, selectors, studies
from annotate.prolific.apis import StudySerializer, plan_document
from annotate.prolific.sync import prolific_submissions_sync

STUDY_ACTIONS = ("publish", "pause", "resume", "stop")
PAYING = ("approve", "reject", "bonus")


class Command(BaseCommand):
    help = "Run a batch's Prolific study: check the token, create, publish, follow, approve, reject and pay."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")

        def with_batch(name: str, helptext: str) -> CommandParser:
            cmd = sub.add_parser(name, help=helptext)
            cmd.add_argument("--batch", required=True, help="batch name")
            cmd.add_argument("--json", action="store_true", help="print the JSON the API answers")
            return cmd

        check = sub.add_parser("check", help="whether the token works and which workspace it reaches")
        check.add_argument("--json", action="store_true", help="print the answer as JSON")
        create = with_batch("create", "create the batch's Prolific study as a draft (nothing is published)")
        create.add_argument("--name", required=True, help="the title participants see on Prolific")
        create.add_argument("--description", required=True, help="what participants will do")
        create.add_argument("--minutes", type=int, required=True, help="estimated minutes to complete")
        create.add_argument("--reward", required=True, help="reward per participant, e.g. 2.50")
        create.add_argument("--internal-name", default="", help="the name you see on Prolific (default: the batch's)")
        create.add_argument("--places", type=int, default=None,
                            help="participants wanted (default: those the batch still needs by its capacity)")
        create.add_argument("--attention-code", default="",
                            help="a completion code for participants ended by attention checks")
        create.add_argument("--base-url", default="http://127.0.0.1:8000",
                            help="the site's address participants open")
        for name in STUDY_ACTIONS:
            with_batch(name, f"{name} the study on Prolific")
        with_batch("show", "the study as Prolific has it now (status, places, cost)")
        with_batch("sync", "read the study's submissions; returned and timed-out ones free their items")
        places = with_batch("add-places", "add places to the study")
        places.add_argument("more", type=int, help="how many places to add")
        for name, helptext in (("approve", "approve submissions on Prolific"),
                               ("reject", "reject submissions on Prolific"),
                               ("bonus", "pay the bonuses of the batch's rule on Prolific, once each")):
            cmd = with_batch(name, helptext)
            cmd.add_argument("--dry-run", action="store_true", help="show what would be sent and its total")
            if name != "bonus":
                cmd.add_argument("--participant", action="append", default=[], metavar="PID",
                                 help="a Prolific participant id (repeat for more)")
            if name == "reject":
                cmd.add_argument("--category", required=True, choices=list(payments.REJECTION_CATEGORIES),
                                 help="Prolific's rejection category")
                cmd.add_argument("--message", required=True,
                                 help=f"what the participant reads (at least {payments.MIN_REJECT_MESSAGE} characters)")

    def handle(self, *args: Any, **opts: Any) -> None:
        name = opts["subcommand"]
        try:
            if name == "check":
                return self._check(opts)
            batch = Batch.objects.filter(name=opts["batch"]).first()
            if batch is None:
                raise CommandError(f"No batch named {opts['batch']!r}.")
            if name == "create":
                return self._create(batch, opts)
            if name in PAYING:
                return self._pay(batch, name, opts)
            return self._study_action(batch, name, opts)
        except ApplicationError as error:
            raise CommandError(error.message) from None

    # --- the study --------------------------------------------------------------------------------------------

    def _check(self, opts: dict) -> None:
        connection = studies.prolific_connect_check(by=None)
        if opts["json"]:
            return self._json({"researcher": connection.researcher, "workspaces": connection.workspaces})
        self.stdout.write(f"The Prolific token in {settings.PROLIFIC_TOKEN_ENV} works: it belongs to "
                          f"{connection.researcher} and reaches the workspace "
                          f"{', '.join(connection.workspaces) or '(none listed)'}.")
        return None

    def _create(self, batch: Batch, opts: dict) -> None:
        study = studies.prolific_study_create(
            batch=batch, by=None, origin=opts["base_url"], name=opts["name"], description=opts["description"],
            estimated_minutes=opts["minutes"], reward=opts["reward"], internal_name=opts["internal_name"],
            places=opts["places"], attention_code=opts["attention_code"])
        if opts["json"]:
            return self._json(StudySerializer(study).data)
        self.stdout.write(f"Created the Prolific study {study.prolific_id} as a draft with {study.places} places: "
                          f"Prolific reports a cost of {_money(study.total_cost_cents)}. Publish it with "
                          f"'prolific publish --batch {batch.name}' when ready.")
        self.stdout.write(f"Study URL: {study.external_url}")
        return None

    def _study_action(self, batch: Batch, name: str, opts: dict) -> None:
        study = selectors.study_for_batch(batch)
        if study is None:
            raise CommandError(f"Batch {batch.name!r} has no Prolific study yet: create it first "
                               f"('prolific create --batch {batch.name} ...').")
        if name == "add-places":
            studies.prolific_study_add_places(study=study, more=opts["more"], by=None)
            said = f"Added {opts['more']} places: the study now has {study.places}, costing {_money(study.total_cost_cents)}."
        elif name == "sync":
            result = prolific_submissions_sync(study=study, by=None)
            study.refresh_from_db()
            said = (f"Read {result.seen} submissions from Prolific; {result.returned} newly returned "
                    f"(their items are free again).")
        elif name == "show":
            studies.prolific_study_refresh(study=study, by=None)
            said = _describe(study)
        else:
            studies.prolific_study_transition(study=study, action=name, by=None)
            said = f"The study is {study.status} on Prolific."
        if opts["json"]:
            return self._json(StudySerializer(study).data)
        self.stdout.write(said)
        return None

    # --- decisions and bonuses ----------------------------------------------------------------------------------

    def _pay(self, batch: Batch, name: str, opts: dict) -> None:
        dry_run = opts["dry_run"]
        if name == "bonus":
            plan = payments.prolific_bonuses_pay(batch=batch, by=None, dry_run=dry_run)
        else:
            pids = [p.strip() for p in opts["participant"] if p.strip()]
            if name == "reject":
                if not pids:
                    raise CommandError("reject: name the participants with --participant PID.")
                decisions = [(pid, "reject", opts["category"], opts["message"]) for pid in pids]
            else:
                decisions = [(pid, "approve", "", "") for pid in pids or _approved_in_app(batch)]
                if not decisions:
                    raise CommandError(f"Nobody to approve: no participant of {batch.name!r} is approved in the app "
                                       f"with a Prolific id; name them with --participant PID.")
            plan = payments.prolific_decisions(batch=batch, decisions=decisions, by=None, dry_run=dry_run)
        if opts["json"]:
            return self._json(plan_document(plan))
        for line in _plan_lines(plan, name):
            self.stdout.write(line)
        return None

    def _json(self, document: Any) -> None:
        self.stdout.write(json.dumps(document, ensure_ascii=False, indent=2, default=str))


def _approved_in_app(batch: Batch) -> list[str]:
    return sorted(d.participation.user.external_id for d in latest_decisions(batch).values()
                  if d.decision == "approve" and d.participation.user.external_id)


def _money(cents: int | None) -> str:
    return "unknown" if cents is None else f"{cents / 100:.2f}"


def _describe(study: ProlificStudy) -> str:
    return (f"The study {study.prolific_id} ({study.name}) is {study.status} on Prolific with {study.places} places "
            f"at {_money(study.reward_cents)} each; Prolific reports a cost of {_money(study.total_cost_cents)}.")


def _plan_lines(plan: payments.Plan, name: str) -> list[str]:
    verb = {"approve": "approve", "reject": "reject", "bonus": "pay a bonus to"}[name]
    lines = []
    for line in plan.send:
        amount = f" {line.amount:.2f}" if line.amount is not None else ""
        lines.append(f"{'Would' if plan.dry_run else 'Did'} {verb} {line.participant_id}{amount}.")
    for line in plan.already:
        lines.append(f"Already done for {line.participant_id}: {line.note}.")
    for line in plan.waiting:
        lines.append(f"Waiting for {line.participant_id}: {line.note}.")
    if name == "bonus":
        fees = f" ({plan.total_with_fees:.2f} with Prolific's fees)" if plan.total_with_fees is not None else ""
        lines.append(f"Bonuses in total: {plan.total:.2f}{fees}.")
    if not plan.send:
        lines.append("Nothing to send to Prolific.")
    elif plan.dry_run:
        lines.append("This was a dry run: nothing was sent. Run it again without --dry-run to send.")
    else:
        lines.append(f"Sent to Prolific: {len(plan.send)}.")
    return lines
