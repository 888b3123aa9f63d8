"""API token authentication with its lookup compiled once per process (it runs on every API request)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from annotate.server.prepared import PreparedQuery

_TOKEN_WITH_USER = PreparedQuery(lambda key: Token.objects.select_related("user").filter(key=key), str)


class PreparedTokenAuthentication(TokenAuthentication):
    """DRF's ``Authorization: Token <key>`` check, answering as DRF does."""

    def authenticate_credentials(self, key):
        token = _TOKEN_WITH_USER.first(key)
        if token is None:
            raise AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise AuthenticationFailed(_("User inactive or deleted."))
        return token.user, token
