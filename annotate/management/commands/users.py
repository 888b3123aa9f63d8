"""python manage.py users add|list|deactivate|reactivate|link — the same services as the People page and /api/users/.

    python manage.py users add --role annotator --from people.csv [--base-url https://lab.example.org]
    python manage.py users list [--role annotator]
    python manage.py users deactivate alice bob      # their work is kept; they can no longer log in
    python manage.py users link alice                # a new one-time set-password link

The CSV has a header line: username (required), and any of email, first_name, last_name. Every line is checked
first; nothing is created unless all are fine. Each new account's set-password link is printed once.
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotate.errors import ApplicationError, InvalidFields
from annotate.models import User
from annotate.people import selectors, services
from annotate.people.rows import person_rows_from_csv


class Command(BaseCommand):
    help = "Create people in bulk from a CSV (with one-time set-password links), list, deactivate them."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="add|list|deactivate|reactivate|link")
        p = sub.add_parser("add", help="create people from a CSV file, all or none")
        p.add_argument("--role", required=True, choices=User.Role.values)
        p.add_argument("--from", dest="source", required=True, metavar="CSV", help="CSV file ('-' for stdin)")
        p.add_argument("--base-url", default="http://127.0.0.1:8000", help="where the app is served")
        p = sub.add_parser("list", help="list people")
        p.add_argument("--role", choices=User.Role.values)
        for action, text in (("deactivate", "deactivate (their work is kept)"), ("reactivate", "let them log in again")):
            p = sub.add_parser(action, help=text)
            p.add_argument("usernames", nargs="+")
        p = sub.add_parser("link", help="print a new one-time set-password link")
        p.add_argument("username")
        p.add_argument("--base-url", default="http://127.0.0.1:8000", help="where the app is served")

    def handle(self, *args, action: str, **opts):
        try:
            getattr(self, f"do_{action}")(opts)
        except InvalidFields as error:
            raise CommandError("nothing was created:\n" + "\n".join(
                f"{f}: {m}" if f else m for f, m in error.problems)) from None
        except ApplicationError as error:
            raise CommandError(error.message) from None

    def do_add(self, opts):
        source = opts["source"]
        if source == "-":
            data: bytes = sys.stdin.buffer.read()
        else:
            path = Path(source)
            if not path.is_file():
                raise CommandError(f"--from {source}: no such file")
            data = path.read_bytes()
        created = services.users_create_bulk(rows=person_rows_from_csv(data), role=opts["role"])
        base = opts["base_url"].rstrip("/")
        self.stdout.write(self.style.SUCCESS(f"Created {len(created)} {opts['role']} account(s). Send each person "
                                             "their link (it works once; shown only now):"))
        for item in created:
            self.stdout.write(f"{item.user.username}\t{item.user.email}\t{base}{item.set_password_path}")

    def do_list(self, opts):
        for user in selectors.users_list(role=opts["role"]):
            state = "active" if user.is_active else "deactivated"
            if user.is_active and not user.has_usable_password():
                state = "no password yet"
            self.stdout.write(f"{user.username}\t{user.role}\t{user.pseudonym}\t{state}")

    def do_deactivate(self, opts):
        users = [selectors.user_get(name) for name in opts["usernames"]]  # all found, or none changed
        for user in users:
            services.user_deactivate(user=user)
            self.stdout.write(f"Deactivated {user.username} (their work is kept).")

    def do_reactivate(self, opts):
        users = [selectors.user_get(name) for name in opts["usernames"]]
        for user in users:
            services.user_reactivate(user=user)
            self.stdout.write(f"Reactivated {user.username}.")

    def do_link(self, opts):
        user = selectors.user_get(opts["username"])
        path = services.user_set_password_link(user=user)
        self.stdout.write(f"{user.username}\t{opts['base_url'].rstrip('/')}{path}")
