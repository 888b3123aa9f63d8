"""The client's address and scheme behind a reverse proxy: taken from X-Forwarded-For / X-Forwarded-Proto only
when the connection comes from an address in TRUSTED_PROXIES.

Any client can send those headers, so the ASGI server is told to ignore them (compose runs uvicorn with
--no-proxy-headers) and the app decides:

- a connection from a trusted proxy: uvicorn's ProxyHeadersMiddleware rewrites the ASGI scope's client and scheme,
  taking the right-most address of X-Forwarded-For that is not itself a trusted proxy (what the client put before
  the proxy's own entry is ignored);
- any other connection: the forwarded headers are dropped before Django sees them, so nothing downstream (the
  login lockout, DRF's throttles, Django's SECURE_PROXY_SSL_HEADER) can be told another address or scheme.

Django's REMOTE_ADDR is then the real client's. With TRUSTED_PROXIES empty (the default) no connection is trusted.
"""

from __future__ import annotations

import ipaddress

from django.core.exceptions import ImproperlyConfigured
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware


def trusted_proxies(values: list[str]) -> tuple[str, ...]:
    """TRUSTED_PROXIES checked at start-up: addresses or networks (CIDR), never "*"."""
    checked = []
    for value in values:
        if value == "*":
            raise ImproperlyConfigured("TRUSTED_PROXIES must name the proxies' addresses or networks: '*' would let "
                                       "any client choose its address (and escape the login lockout)")
        try:
            checked.append(str(ipaddress.ip_network(value, strict=False)) if "/" in value
                           else str(ipaddress.ip_address(value)))
        except ValueError:
            raise ImproperlyConfigured(f"TRUSTED_PROXIES: {value!r} is not an IP address or network "
                                       "(e.g. 172.30.0.10 or 172.30.0.0/24)") from None
    return tuple(checked)


# Headers by which a proxy tells the app about the client; "forwarded" is RFC 7239's. ASGI names are lower-case.
FORWARDED_HEADERS = frozenset({b"forwarded", b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host",
                               b"x-forwarded-port", b"x-real-ip"})


class ForwardedHeaders:
    """ASGI middleware: forwarded headers read from ``proxies`` only, dropped from every other connection."""

    def __init__(self, app, proxies: tuple[str, ...]):
        self.networks = [ipaddress.ip_network(proxy, strict=False) for proxy in proxies]
        self.app = ProxyHeadersMiddleware(app, trusted_hosts=list(proxies)) if proxies else app

    def _trusted(self, client) -> bool:
        if not client or not self.networks:
            return False
        try:
            address = ipaddress.ip_address(client[0])
        except ValueError:  # a unix socket's peer: not one of the proxies named by address
            return False
        return any(address in network for network in self.networks)

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket") and not self._trusted(scope.get("client")):
            scope = {**scope, "headers": [(name, value) for name, value in scope["headers"]
                                          if name not in FORWARDED_HEADERS]}
        return await self.app(scope, receive, send)
