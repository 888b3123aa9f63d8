"""The client's address and scheme behind a reverse proxy: taken from X-Forwarded-For / X-Forwarded-Proto only
when the connection comes from an address in TRUSTED_PROXIES.

Any client can send those headers, so the web server is told to ignore them (compose runs uvicorn with
--no-proxy-headers; gunicorn, for the WSGI side of a split deployment, gets ``forwarded_allow_ips = ""`` from
annotate/config/gunicorn.py) and the app decides, the same way under ASGI and WSGI:

- a connection from a trusted proxy: uvicorn's ProxyHeadersMiddleware rewrites the ASGI scope's client and scheme,
  taking the right-most address of X-Forwarded-For that is not itself a trusted proxy (what the client put before
  the proxy's own entry is ignored); under WSGI ``WsgiForwardedHeaders`` sets REMOTE_ADDR and the scheme alike;
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


class TrustedProxies:
    """Whether a connection's peer is one of the proxies, and which address of X-Forwarded-For is the client's."""

    def __init__(self, proxies: tuple[str, ...]):
        self.networks = [ipaddress.ip_network(proxy, strict=False) for proxy in proxies]

    def trusts(self, host: str | None) -> bool:
        if not self.networks:  # no proxy configured (the default): nothing to parse on each request
            return False
        address = _address(host)  # None for a unix socket's peer: not one of the proxies named by address
        return address is not None and any(address in network for network in self.networks)

    def client_in(self, forwarded_for: str) -> str | None:
        """The right-most address that is not a trusted proxy (each proxy appends the address it was reached
        from, so what is left of it is the client's own claim); the left-most one if every entry is a proxy."""
        hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
        client = next((hop for hop in reversed(hops) if not self.trusts(hop)), hops[0] if hops else None)
        return client if _address(client) is not None else None  # not an address: nothing to believe


def _address(value: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(value) if value else None
    except ValueError:
        return None


class ForwardedHeaders:
    """ASGI middleware: forwarded headers read from ``proxies`` only, dropped from every other connection."""

    def __init__(self, app, proxies: tuple[str, ...]):
        self.proxies = TrustedProxies(proxies)
        self.app = ProxyHeadersMiddleware(app, trusted_hosts=list(proxies)) if proxies else app

    async def __call__(self, scope, receive, send):
        client = scope.get("client")
        if scope["type"] in ("http", "websocket") and not self.proxies.trusts(client[0] if client else None):
            scope = {**scope, "headers": [(name, value) for name, value in scope["headers"]
                                          if name not in FORWARDED_HEADERS]}
        return await self.app(scope, receive, send)


# The same headers as WSGI environ keys (HTTP_ + upper case, dashes as underscores).
FORWARDED_ENVIRON = frozenset("HTTP_" + name.decode().upper().replace("-", "_") for name in FORWARDED_HEADERS)


class WsgiForwardedHeaders:
    """WSGI middleware, for the HTTP processes of a split deployment (gunicorn): from a trusted proxy, REMOTE_ADDR
    becomes the client's address and X-Forwarded-Proto the scheme; from any other connection the forwarded headers
    are dropped before Django sees them."""

    def __init__(self, app, proxies: tuple[str, ...]):
        self.app = app
        self.proxies = TrustedProxies(proxies)

    def __call__(self, environ, start_response):
        if self.proxies.trusts(environ.get("REMOTE_ADDR")):
            client = self.proxies.client_in(environ.get("HTTP_X_FORWARDED_FOR", ""))
            if client:
                environ["REMOTE_ADDR"] = client
            scheme = environ.get("HTTP_X_FORWARDED_PROTO", "").strip().lower()
            if scheme in ("http", "https"):
                environ["wsgi.url_scheme"] = scheme
        else:
            for key in FORWARDED_ENVIRON & environ.keys():
                del environ[key]
        return self.app(environ, start_response)
