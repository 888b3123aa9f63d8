"""DRF's token authentication with its one read (the token with its user) compiled once per process
(annotate.server.compiled_reads): every API request of the load clients and scripts passes through it."""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from annotate.server import compiled_reads


def _token_query(*, key: str) -> QuerySet[Token]:
    return Token.objects.filter(key=key)


class CompiledTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``, answered as DRF's own class answers it (the same errors and messages)."""

    def authenticate_credentials(self, key: str) -> tuple[AbstractBaseUser, Token]:
        found = compiled_reads.fetch(_token_query, (), {"key": key}, related=("user",))
        if not found:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token = found[0]
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return token.user, token
