"""Reads about people: lists for the admin's page and API, one account by username, a user's token status."""

from __future__ import annotations

from django.db.models import QuerySet
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


def user_get(username: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"No account named {username!r}.")
    return user


def token_get(user: User) -> Token | None:
    """The user's token row (for its creation date); its key is never shown again after issue."""
    return Token.objects.filter(user=user).first()
