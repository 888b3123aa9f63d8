"""Set-password links sent by e-mail through Django's mail backends (SMTP in a deployment, the console in the demo;
EMAIL_* settings): one message per person, in one connection; people without an address are named back."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.utils import translation
from django.utils.translation import gettext as _

from annotate.errors import ApplicationError
from annotate.models import User

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sent:
    emailed: list[str]
    without_address: list[str]


def set_password_links_email(*, links: Sequence[tuple[User, str]], timeout_days: int) -> Sent:
    """E-mail each person with an address their own link (never anyone else's). A mail server that refuses is an
    ApplicationError that says so; nothing is retried."""
    if not settings.EMAIL_ENABLED:
        raise ApplicationError(_("E-mail is not set up on this server (EMAIL_HOST): copy or download the links."),
                               code="email_off")
    messages, without = [], []
    for user, link in links:
        if not user.email:
            without.append(user.username)
            continue
        # In the person's language where their account has one; else the page's (the admin's).
        with translation.override(user.language) if user.language else nullcontext():
            body = _("Hello %(name)s,\n\nAn account on Feedback Lab was made for you. Your username is "
                     "%(username)s.\nChoose your password with this link (it works once and expires after %(days)d "
                     "days):\n\n%(link)s\n") % {"name": user.first_name or user.username, "username": user.username,
                                                  "link": link, "days": timeout_days}
            subject = _("Your Feedback Lab account: choose a password")
        messages.append(EmailMessage(subject, body, to=[user.email]))
    if messages:
        try:
            with get_connection() as connection:
                connection.send_messages(messages)
        except OSError as error:  # smtplib's errors are OSErrors, as are refused connections and timeouts
            logger.warning("set-password e-mails not sent: %s", error)
            raise ApplicationError(_("The mail server did not take the e-mails (%(error)s); nothing was sent.")
                                   % {"error": error}, code="email_failed") from None
    return Sent([u.username for u, _link in links if u.email], without)
