"""Reads about people: lists for the admin's page and API, one account by username, a user's token status."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from rest_framework.authtoken.models import Token

from annotate.errors import NotFound
from annotate.models import User


def users_list(*, role: str | None = None, active: bool | None = None) -> QuerySet[User]:
    users = User.objects.order_by("role", "username")
    if role:
        users = users.filter(role=role)
    if active is not None:
        users = users.filter(is_active=active)
    return users


def people_page_list(*, crowd: bool, query: str = "", role: str = "") -> QuerySet[User]:
    """The People page's list: crowd participants (joined through an invite link) apart from the team (admins,
    researchers, annotators with accounts), searched by username, e-mail, name or pseudonym, of one role."""
    joined = Q(crowd_batch__isnull=False) | Q(invite_link__isnull=False)
    users = User.objects.filter(joined if crowd else ~joined).order_by("role", "username")
    if query:
        users = users.filter(Q(username__icontains=query) | Q(email__icontains=query) | Q(pseudonym__icontains=query)
                             | Q(first_name__icontains=query) | Q(last_name__icontains=query))
    if role in User.Role.values:
        users = users.filter(role=role)
    return users


def user_get(username: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"No account named {username!r}.")
    return user


def token_get(user: User) -> Token | None:
    """The user's token row (for its creation date); its key is never shown again after issue."""
    return Token.objects.filter(user=user).first()
