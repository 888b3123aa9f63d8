"""WebSocket authentication from the Django session cookie, in one hop to the database thread."""

from __future__ import annotations

from importlib import import_module
from types import SimpleNamespace

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib import auth
from django.contrib.auth.models import AnonymousUser
from django.http.cookie import parse_cookie


class SessionCookieAuthMiddleware:
    """Sets ``scope["user"]`` from the session cookie, as channels' ``AuthMiddlewareStack`` does, with Django's own
    checks (``django.contrib.auth.get_user``: the session's backend and auth hash, secret key fallbacks included).

    One hop to the database thread per connection, where the stack makes two (one of them only to create the
    session store). The consumers read the user only, so no ``scope["session"]`` is set."""

    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        cookie = next((value for name, value in scope.get("headers", ()) if name == b"cookie"), b"")
        session_key = parse_cookie(cookie.decode("latin1")).get(settings.SESSION_COOKIE_NAME)
        user = await _user_of_session(session_key) if session_key else AnonymousUser()
        return await self.inner(dict(scope, user=user), receive, send)


@database_sync_to_async
def _user_of_session(session_key: str):
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    return auth.get_user(SimpleNamespace(session=session))
