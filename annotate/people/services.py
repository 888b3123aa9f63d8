"""Writes about people: accounts in bulk with one-time set-password links, deactivation, API tokens.

The page, the API and ``manage.py users`` / ``manage.py token`` all call these.

- An admin-role account is Django staff and superuser, so it can use the Django admin (``/admin/``) once its
  owner has set a password.
- A set-password link is Django's password-reset token (``default_token_generator``): it is a hash over the
  account's password and last login, so it stops working once used (and after PASSWORD_RESET_TIMEOUT, 3 days by
  default). New accounts have an unusable password until their owner follows it.
- Deactivating keeps the account and all its work (sessions, ratings, exports by pseudonym); it can no longer log
  in, and its API token is deleted.
- A token is DRF's ``authtoken`` Token: issuing replaces the old one, and its key is returned once to be shown
  once; revoking deletes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.contrib.auth.tokens import default_token_generator
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from rest_framework.authtoken.models import Token

from annotate.errors import ApplicationError, InvalidFields
from annotate.models import User

MAX_ROWS = 5000
ROW_FIELDS = ("username", "email", "first_name", "last_name")
FIELD_LIMITS = {"username": 150, "email": 254, "first_name": 150, "last_name": 150}


@dataclass(frozen=True)
class PersonRow:
    """One person to create; ``where`` names it in errors ("line 3" of a CSV, "users[2]" of an API body)."""

    where: str
    username: str
    email: str = ""
    first_name: str = ""
    last_name: str = ""
    unknown: tuple[str, ...] = field(default=())  # columns or keys that are not person fields


@dataclass(frozen=True)
class CreatedUser:
    user: User
    set_password_path: str


def set_password_path(user: User) -> str:
    """A fresh one-time link (path) for ``user`` to choose a password."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("password-set", kwargs={"uidb64": uid, "token": default_token_generator.make_token(user)})


def _row_problems(rows: Sequence[PersonRow], role: str) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if role not in User.Role.values:
        problems.append(("role", f"unknown role {role!r}; use one of {', '.join(User.Role.values)}"))
    if not rows:
        problems.append(("users", "no people given: add at least one row with a username"))
    if len(rows) > MAX_ROWS:
        problems.append(("users", f"{len(rows)} people at once; at most {MAX_ROWS} per request"))
    seen: dict[str, str] = {}
    check_username = UnicodeUsernameValidator()
    for row in rows:
        for name in row.unknown:
            problems.append((f"{row.where}, {name}", f"unknown field; use {', '.join(ROW_FIELDS)}"))
        for name, limit in FIELD_LIMITS.items():
            if len(getattr(row, name)) > limit:
                problems.append((f"{row.where}, {name}", f"longer than {limit} characters"))
        username = row.username
        if not username:
            problems.append((f"{row.where}, username", "is empty"))
        else:
            try:
                check_username(username)
            except ValidationError:
                problems.append((f"{row.where}, username",
                                 f"{username!r} may hold only letters, digits and @ . + - _ (no spaces)"))
            folded = username.casefold()
            if folded in seen:
                problems.append((f"{row.where}, username", f"{username!r} is also on {seen[folded]}"))
            seen.setdefault(folded, row.where)
        if row.email:
            try:
                validate_email(row.email)
            except ValidationError:
                problems.append((f"{row.where}, email", f"{row.email!r} is not an e-mail address"))
    taken = {name.casefold(): name for name in User.objects.annotate(folded=Lower("username")).filter(
        folded__in=[name.lower() for name in seen]).values_list("username", flat=True)}
    for row in rows:
        existing = taken.get(row.username.casefold()) if row.username else None
        if existing is not None:
            problems.append((f"{row.where}, username", f"an account {existing!r} already exists"))
    return problems


def users_create_bulk(*, rows: Sequence[PersonRow], role: str) -> list[CreatedUser]:
    """Create every person or none: all rows are checked first, every problem is reported with its row and field."""
    problems = _row_problems(rows, role)
    if problems:
        raise InvalidFields(problems)
    try:
        with transaction.atomic():
            # The admin role is Django's staff and superuser: admins use /admin/ (README), where Django asks for both.
            admin = role == User.Role.ADMIN
            users = [User(username=row.username, email=row.email, first_name=row.first_name,
                          last_name=row.last_name, role=role, is_staff=admin, is_superuser=admin) for row in rows]
            for user in users:
                user.set_unusable_password()
                user.save()
    except IntegrityError:  # an account created meanwhile: nothing of this request was kept
        raise ApplicationError("Another request created one of these accounts meanwhile; nothing was created. "
                               "Send the list again to see which.") from None
    return [CreatedUser(user=user, set_password_path=set_password_path(user)) for user in users]


def user_set_password_link(*, user: User) -> str:
    """A new one-time link for someone who lost theirs (it also works to reset a forgotten password)."""
    if not user.is_active:
        raise ApplicationError(f"{user.username!r} is deactivated: reactivate the account before sending a link.")
    return set_password_path(user)


def user_deactivate(*, user: User, by: User | None = None) -> User:
    """The account stays with its work; it can no longer log in or use the API. Repeating it is a no-op."""
    if by is not None and by.pk == user.pk:
        raise ApplicationError("You cannot deactivate your own account (ask another admin).")
    with transaction.atomic():
        User.objects.filter(pk=user.pk).update(is_active=False)
        Token.objects.filter(user=user).delete()
    user.is_active = False
    return user


def user_reactivate(*, user: User) -> User:
    User.objects.filter(pk=user.pk).update(is_active=True)
    user.is_active = True
    return user


def token_issue(*, user: User) -> str:
    """A new API token for ``user``, replacing any old one. The key is returned here, to be shown once."""
    if not user.is_active:
        raise ApplicationError(f"{user.username!r} is deactivated and cannot have an API token.")
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return str(Token.objects.create(user=user).key)


def token_revoke(*, user: User) -> bool:
    """Delete ``user``'s token; returns whether there was one."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)
