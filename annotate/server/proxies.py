"""The client's address and scheme behind a reverse proxy: taken from X-Forwarded-For / X-Forwarded-Proto only
when the connection comes from an address in TRUSTED_PROXIES.

Any client can send those headers, so the ASGI server is told to ignore them (compose runs uvicorn with
--no-proxy-headers) and the app decides: uvicorn's ProxyHeadersMiddleware rewrites the ASGI scope's client and
scheme for connections from a trusted proxy, taking the right-most address of X-Forwarded-For that is not itself
a trusted proxy (what the client put before the proxy's own entry is ignored). Django's REMOTE_ADDR, the login
lockout (django-axes) and DRF's throttles then see the real client. With TRUSTED_PROXIES empty (the default)
nothing is rewritten: REMOTE_ADDR is the peer of the connection.
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


def behind_trusted_proxies(app, proxies: tuple[str, ...]):
    """``app`` reading forwarded headers from ``proxies`` only; ``app`` itself when there are none."""
    if not proxies:
        return app
    return ProxyHeadersMiddleware(app, trusted_hosts=list(proxies))
