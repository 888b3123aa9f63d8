"""Crowdsourcing entry: signed per-batch invite links, Prolific-style participant ids, completion codes.

- An invite token is ``django.core.signing`` over ``{"b": batch id, "e": expiry (epoch seconds) or null}``, salted
  for this purpose and signed with SECRET_KEY. Tampering with it breaks the signature; it expires when ``e`` has
  passed; closing the batch (status not ready) stops every link of it.
- Signed is not secret: anyone holding the link can read its payload. So the completion code is NOT in the token:
  it is ``Batch.completion_code``, shown by the completion page only to a participant of that batch who has no
  items left.
- A participant is a plain annotator with a random username, an unusable password and a pseudonym; with
  ``?PROLIFIC_PID=…`` the same PID comes back to the same account (``User.external_id``), which is never shown to
  other people. Accounts that can log in otherwise (a password, or a researcher/admin role) are never entered
  through a PID.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.core import signing
from django.db import IntegrityError, transaction
from django.utils.translation import gettext

from annotate.errors import ApplicationError
from annotate.models import Assignment, Batch, User
from annotate.queue.services import open_items_count

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


def invite_token_create(*, batch: Batch, expires_in: timedelta | None = None, now: float | None = None) -> str:
    expires = None
    if expires_in is not None:
        expires = int((now if now is not None else time.time()) + expires_in.total_seconds())
    return signing.dumps({"b": batch.pk, "e": expires}, salt=SALT, compress=False)


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
    if batch.status != Batch.Status.READY:
        raise ExpiredInvite(gettext("This study is closed."))
    expires_at = datetime.fromtimestamp(expires, tz=UTC) if expires is not None else None
    return Invite(batch=batch, expires_at=expires_at)


def _new_participant(batch: Batch, external_id: str | None) -> User:
    user = User(username=f"crowd-{secrets.token_hex(6)}", role=User.Role.ANNOTATOR, external_id=external_id,
                crowd_batch=batch)
    user.set_unusable_password()
    user.save()
    return user


def participant_for_invite(*, invite: Invite, prolific_pid: str | None = None,
                           current_user: User | None = None) -> User:
    """The annotator account to log in for this invite: the PID's account (created on first use), else the
    participant already logged in in this browser, else a new pseudonymous one. Joins them to the batch."""
    batch = invite.batch
    if prolific_pid is not None:
        pid = prolific_pid.strip()
        if not PID_PATTERN.match(pid):
            raise ApplicationError(gettext("PROLIFIC_PID must be 1–64 letters, digits, '-' or '_'."), code="bad_pid")
        user = User.objects.filter(external_id=pid).first()
        if user is None:
            try:
                with transaction.atomic():
                    return _new_participant(batch, pid)
            except IntegrityError:  # the same participant opened the link twice at once
                user = User.objects.get(external_id=pid)
        return _rejoin(user, batch)
    if current_user is not None and current_user.is_authenticated and _is_participant(current_user):
        return _rejoin(current_user, batch)
    return _new_participant(batch, None)


def _is_participant(user: User) -> bool:
    """Made by an invite: an annotator who cannot log in with a password."""
    return user.role == User.Role.ANNOTATOR and not user.has_usable_password() and not user.is_staff


def _rejoin(user: User, batch: Batch) -> User:
    if not _is_participant(user) or not user.is_active:
        raise ApplicationError(gettext("This participant id cannot be used with an invitation link."), code="bad_pid")
    if user.crowd_batch_id != batch.pk:
        user.crowd_batch = batch
        user.save(update_fields=["crowd_batch"])
    return user


def batch_set_completion_code(*, batch: Batch, code: str) -> None:
    code = (code or "").strip()
    if len(code) > 64 or not re.fullmatch(r"[A-Za-z0-9_-]*", code):
        raise ApplicationError("A completion code is at most 64 letters, digits, '-' or '_'.", code="bad_code")
    Batch.objects.filter(pk=batch.pk).update(completion_code=code)
    batch.completion_code = code


def participant_items_left(*, participant: User, batch: Batch) -> int:
    """Items the participant still has to do besides the one in progress (the completion page's count): their
    share of the batch (``items_per_participant`` less what they took, finished or under way; skips do not count),
    capped by what the queue could still serve them. Without a share, what the queue could serve them."""
    open_to_them = open_items_count(annotator=participant)
    if not batch.items_per_participant or not open_to_them:
        return open_to_them
    taken = Assignment.objects.filter(
        annotator=participant, work_item__batch=batch,
        status__in=[Assignment.Status.ACTIVE, Assignment.Status.COMPLETED],
    ).count()
    return max(0, min(batch.items_per_participant - taken, open_to_them))
