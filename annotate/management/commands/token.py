"""python manage.py token issue|revoke USERNAME — the same services as the API token page and /api/token/.

    export TOKEN=$(python manage.py token issue alice)
    curl -H "Authorization: Token $TOKEN" http://127.0.0.1:8000/api/models/

``issue`` prints only the key (so it can be captured), replacing the user's old token; ``revoke`` deletes it.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotate.errors import ApplicationError
from annotate.people import selectors, services


class Command(BaseCommand):
    help = "Issue (print once, replacing the old one) or revoke a user's API token."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=("issue", "revoke"))
        parser.add_argument("username")

    def handle(self, *args, action: str, username: str, **opts):
        try:
            user = selectors.user_get(username)
            if action == "issue":
                self.stdout.write(services.token_issue(user=user))
            elif services.token_revoke(user=user):
                self.stdout.write(f"Revoked the API token of {user.username}.")
            else:
                self.stdout.write(f"{user.username} had no API token.")
        except ApplicationError as error:
            raise CommandError(error.message) from None
