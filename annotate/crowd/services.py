"""Crowdsourcing entry: signed per-batch invite links, Prolific-style participant ids, completion codes.

- An invite token is ``django.core.signing`` over ``{"b": batch id, "e": expiry (epoch seconds) or null, "l":
  InviteLink id}``, salted for this purpose and signed with SECRET_KEY. Tampering with it breaks the signature; it
  expires when ``e`` has passed; revoking its InviteLink row stops it; closing the batch (status not ready) stops
  every link of it. Tokens made before links were rows carry no "l" and keep working.
- Signed is not secret: anyone holding the link can read its payload. So the completion code is NOT in the token:
  it is ``Batch.completion_code``, shown by the completion page only to a participant of that batch who has no
  items left.
- A participant is a plain annotator with a random username, an unusable password and a pseudonym, bound to the
  batch whose link made it (``User.crowd_batch``). With ``?PROLIFIC_PID=…`` the same PID on a link of the same
  batch comes back to the same account (``User.external_id``, never shown to other people), from any device. A PID
  is typed into a URL by whoever holds the link, so it opens nothing else: on another batch's link it makes an
  account of that batch (the same person in two studies has two accounts), it never moves a participant to
  another batch, and it never enters an account that can log in otherwise (a password, a staff or superuser flag,
  a researcher/admin role) or that was not made through an invite link.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from annotate.errors import ApplicationError
from annotate.models import Batch, InviteLink, Participation, User

SALT = "feedback_lab.crowd.invite"
PID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class InvalidInvite(ApplicationError):
    code = "invalid_invite"


class ExpiredInvite(ApplicationError):
    http_status = 410
    code = "expired_invite"


@dataclass(frozen=True)
class Invite:
    batch: Batch
    expires_at: datetime | None
    link: InviteLink | None = None


def invite_token_create(*, batch: Batch, expires_in: timedelta | None = None, now: float | None = None,
                        link: InviteLink | None = None) -> str:
    expires = None
    if link is not None and link.expires_at is not None:
        expires = int(link.expires_at.timestamp())
    elif expires_in is not None:
        expires = int((now if now is not None else time.time()) + expires_in.total_seconds())
    payload = {"b": batch.pk, "e": expires}
    if link is not None:
        payload["l"] = link.pk
    return signing.dumps(payload, salt=SALT, compress=False)


PROLIFIC_PARAMS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def invite_link_create(*, batch: Batch, label: str = "", expires_in_days: float | None = None,
                       items_per_participant: int | None = None, completion_code: str | None = None,
                       created_by: User | None = None) -> tuple[InviteLink, str]:
    """A new invite link (a row, so it can be listed, counted and revoked) and its token. The per-participant item
    limit (0: none) and the completion code are the batch's, shared by its links; None leaves them as they are."""
    label = (label or "").strip()
    if len(label) > 128:
        raise ApplicationError(gettext("A label is at most 128 characters."), code="bad_label")
    if expires_in_days is not None and not 0 < expires_in_days <= 3650:
        raise ApplicationError(gettext("Expiry must be between 0 and 3650 days (leave it empty for none)."),
                               code="bad_expiry")
    if items_per_participant is not None and not 0 <= items_per_participant <= 100_000:
        raise ApplicationError(gettext("Items per participant must be 0 (no limit) or more."), code="bad_limit")
    if batch.status != Batch.Status.READY:
        raise ApplicationError(gettext("This batch is closed: open it before inviting people."), code="batch_closed")
    with transaction.atomic():
        if completion_code is not None:
            batch_set_completion_code(batch=batch, code=completion_code)
        if items_per_participant is not None:
            batch.items_per_participant = items_per_participant or None
            batch.save(update_fields=["items_per_participant"])
        expires_at = None if expires_in_days is None else timezone.now() + timedelta(days=expires_in_days)
        link = InviteLink.objects.create(batch=batch, label=label, created_by=created_by, expires_at=expires_at)
    return link, invite_token_create(batch=batch, link=link)


def invite_link_revoke(*, link: InviteLink) -> InviteLink:
    """The link stops working at once; the people who joined through it keep their account and their work."""
    InviteLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    link.refresh_from_db()
    return link


def invite_read(token: str, *, now: float | None = None) -> Invite:
    """The invite behind a token; raises InvalidInvite (bad signature, unknown batch) or ExpiredInvite."""
    try:
        payload = signing.loads(token, salt=SALT)
    except signing.BadSignature:
        raise InvalidInvite(gettext("This invitation link is not valid. Check that you copied all of it.")) from None
    if not isinstance(payload, dict) or not isinstance(payload.get("b"), int):
        raise InvalidInvite(gettext("This invitation link is not valid."))
    expires = payload.get("e")
    if expires is not None and (now if now is not None else time.time()) > expires:
        raise ExpiredInvite(gettext("This invitation link has expired."))
    batch = Batch.objects.filter(pk=payload["b"]).first()
    if batch is None:
        raise InvalidInvite(gettext("This invitation link is not valid."))
    link = None
    if "l" in payload:
        link = InviteLink.objects.filter(pk=payload["l"], batch=batch).first()
        if link is None:
            raise InvalidInvite(gettext("This invitation link is not valid."))
        if link.revoked_at is not None:
            raise ExpiredInvite(gettext("This invitation link was withdrawn by the study's researchers."))
    if batch.status != Batch.Status.READY:
        raise ExpiredInvite(gettext("This study is closed."))
    expires_at = datetime.fromtimestamp(expires, tz=UTC) if expires is not None else None
    return Invite(batch=batch, expires_at=expires_at, link=link)


def _new_participant(batch: Batch, external_id: str | None, link: InviteLink | None) -> User:
    user = User(username=f"crowd-{secrets.token_hex(6)}", role=User.Role.ANNOTATOR, external_id=external_id,
                crowd_batch=batch, invite_link=link)
    user.set_unusable_password()
    user.save()
    Participation.objects.create(user=user, batch=batch)  # their way through the study starts now (time limit)
    return user


def participant_for_invite(*, invite: Invite, prolific_pid: str | None = None,
                           current_user: User | None = None) -> User:
    """The annotator account to log in for this invite: the PID's account of this batch (created on first use),
    else the participant of this batch already logged in in this browser, else a new pseudonymous one."""
    batch = invite.batch
    if prolific_pid is not None:
        pid = prolific_pid.strip()
        if not PID_PATTERN.match(pid):
            raise ApplicationError(gettext("PROLIFIC_PID must be 1–64 letters, digits, '-' or '_'."), code="bad_pid")
        user = User.objects.filter(external_id=pid, crowd_batch=batch).first()
        if user is None:
            if User.objects.filter(external_id=pid, crowd_batch__isnull=True).exists():
                raise _pid_refused()  # an account not made by an invite link carries this id
            try:
                with transaction.atomic():
                    return _new_participant(batch, pid, invite.link)
            except IntegrityError:  # the same participant opened the link twice at once
                user = User.objects.get(external_id=pid, crowd_batch=batch)
        if not _is_participant(user):
            raise _pid_refused()
        return _rejoin(user, invite)
    if current_user is not None and current_user.is_authenticated and _is_participant(current_user) \
            and current_user.crowd_batch_id == batch.pk:
        return _rejoin(current_user, invite)
    return _new_participant(batch, None, invite.link)


def _pid_refused() -> ApplicationError:
    return ApplicationError(gettext("This participant id cannot be used with an invitation link."), code="bad_pid")


def _is_participant(user: User) -> bool:
    """Made by an invite link, and able to log in only through one: an active annotator of a crowd batch with no
    password, no staff or superuser flag."""
    return (user.role == User.Role.ANNOTATOR and user.crowd_batch_id is not None and user.is_active
            and not user.has_usable_password() and not user.is_staff and not user.is_superuser)


def _rejoin(user: User, invite: Invite) -> User:
    """A participant of ``invite``'s batch back through one of its links: never moved to another batch."""
    if invite.link is not None and user.invite_link_id is None:
        user.invite_link = invite.link  # counted under the first link of this batch they came through
        user.save(update_fields=["invite_link"])
    return user


def batch_set_completion_code(*, batch: Batch, code: str) -> None:
    code = (code or "").strip()
    if len(code) > 64 or not re.fullmatch(r"[A-Za-z0-9_-]*", code):
        raise ApplicationError(gettext("A completion code is at most 64 letters, digits, '-' or '_'."), code="bad_code")
    Batch.objects.filter(pk=batch.pk).update(completion_code=code)
    batch.completion_code = code
