"""DRF's token authentication with its one read (the token with its user) compiled once per process
(annotate.server.compiled_reads): every API request of the load clients and scripts passes through it."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from annotate.server import compiled_reads


def _token_with_user(*, key: str) -> QuerySet[Any]:
    user_model = Token._meta.get_field("user").related_model
    return Token.objects.filter(key=key).values_list(*compiled_reads.columns(Token),
                                                     *compiled_reads.columns(user_model, "user__"))


class CompiledTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``, answered as DRF's own class answers it (the same errors and messages)."""

    def authenticate_credentials(self, key: str) -> tuple[AbstractBaseUser, Token]:
        found = compiled_reads.rows(_token_with_user, (), {"key": key})
        if found is None:
            return super().authenticate_credentials(key)
        if not found:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token, user = compiled_reads.instances(found[0], Token, Token._meta.get_field("user").related_model)
        token.user = user
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return user, token
