"""python manage.py invite_link --batch NAME [--label TEXT] [--expires-days N] [--completion-code CODE]
                                [--items-per-participant N] [--base-url URL]
   python manage.py invite_link --batch NAME --list [--base-url URL]
   python manage.py invite_link --batch NAME --revoke LINK_ID

Creates a signed invite link for the batch (the same service as the researcher's "Invite links" page and
/api/batches/<id>/invite-links/) and prints it with Prolific's URL parameters; lists the links with how they were
used; revokes one.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotate.crowd import selectors, services
from annotate.errors import ApplicationError
from annotate.models import Batch


class Command(BaseCommand):
    help = "Create, list or revoke a batch's invite links (participants join as pseudonymous annotators)."

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="batch name")
        parser.add_argument("--label", default="", help="a label for you, e.g. 'Prolific pilot'")
        parser.add_argument("--expires-days", type=float, default=None, help="the link stops working after N days")
        parser.add_argument("--completion-code", default=None,
                            help="code shown to participants who finish (stored on the batch, not in the link)")
        parser.add_argument("--items-per-participant", type=int, default=None,
                            help="each participant gets at most N items, then the completion code (0: no limit)")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000", help="where the app is served")
        parser.add_argument("--list", action="store_true", help="list the batch's links and their use")
        parser.add_argument("--revoke", type=int, metavar="LINK_ID", help="revoke a link (its people keep their work)")

    def handle(self, *args, **opts):
        batch = Batch.objects.filter(name=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"No batch named {opts['batch']!r}.")
        base = opts["base_url"].rstrip("/")
        if opts["list"]:
            return self._list(batch, base)
        if opts["revoke"] is not None:
            link = selectors.invite_link_of_batch(batch=batch, link_id=opts["revoke"])
            if link is None:
                raise CommandError(f"No invite link {opts['revoke']} in batch {batch.name!r}.")
            services.invite_link_revoke(link=link)
            self.stdout.write(f"Revoked invite link {link.pk}.")
            return None
        try:
            link, _ = services.invite_link_create(
                batch=batch, label=opts["label"], expires_in_days=opts["expires_days"],
                items_per_participant=opts["items_per_participant"], completion_code=opts["completion_code"])
        except ApplicationError as error:
            raise CommandError(error.message) from None
        path, prolific = selectors.invite_link_paths(link)
        self.stdout.write(base + path)
        self.stdout.write(f"Prolific study URL: {base}{prolific}", style_func=None)
        batch.refresh_from_db()
        if batch.items_per_participant:
            self.stdout.write(f"Items per participant: {batch.items_per_participant}")
        if batch.completion_code:
            self.stdout.write(f"Completion code: {batch.completion_code}")
        else:
            self.stdout.write("No completion code set (use --completion-code).")
        return None

    def _list(self, batch: Batch, base: str) -> None:
        rows = selectors.invite_links_usage(batch=batch)
        if not rows:
            self.stdout.write(f"No invite links for batch {batch.name!r}.")
            return
        for row in rows:
            share = "-" if row.finished_share is None else str(row.finished_share)
            self.stdout.write(f"{row.link.pk}\t{row.state}\t{row.link.label or '-'}\tjoined {row.joined}\t"
                              f"items done {row.items_done}\tfinished share {share}\t{base}{row.path}")
