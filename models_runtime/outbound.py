"""What a model config may make a worker send, and to where: the rules the server backends (``openai``) apply
when they are built and before each request, and that the app's config checks apply when a config is saved.

- A key is read from the environment variable named by ``api_key_env`` and sent as a Bearer token to the model's
  server. Only a variable meant for a model key may be named: ``<NAME>_API_KEY`` (OPENAI_API_KEY, VLLM_API_KEY).
  The worker's other variables (the app's SECRET_KEY, DATABASE_URL, cloud credentials) never match, so no model
  config can send them anywhere.
- A model host is never link-local (169.254.0.0/16, fe80::/10) nor a cloud metadata service (AWS, GCP, Azure,
  Alibaba): from inside a cloud machine those hand out its credentials. Checked on the URL as written when a
  config is saved, and on the addresses the host resolves to before each request.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

API_KEY_ENV_PATTERN = re.compile(r"[A-Z][A-Z0-9_]*_API_KEY")
API_KEY_ENV_RULE = "must name a variable meant for a model's key: upper-case letters, digits and _, ending in _API_KEY"

# Metadata services that are not link-local (those are refused as a whole range), and their usual host names.
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("100.100.100.200")})
METADATA_HOSTS = frozenset({"metadata", "metadata.google.internal", "metadata.goog", "instance-data",
                            "instance-data.ec2.internal"})


def api_key_env_problem(name: str) -> str | None:
    """Why ``name`` may not be an ``api_key_env``, or None."""
    if API_KEY_ENV_PATTERN.fullmatch(name):
        return None
    return f"{name!r} {API_KEY_ENV_RULE} (e.g. OPENAI_API_KEY)"


def _forbidden_address(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])  # an IPv6 zone ("fe80::1%eth0") is not part of it
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_link_local or address in METADATA_ADDRESSES


def host_problem(url: str) -> str | None:
    """Why the host of ``url`` as written may not serve a model (a link-local or metadata address), or None."""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host in METADATA_HOSTS or _forbidden_address(host):
        return (f"{host} is a link-local or cloud metadata address, never a model server: "
                "use the address of the server itself")
    return None


def resolved_host_problem(url: str) -> str | None:
    """Like ``host_problem``, also for the addresses the host name resolves to now (a name may point anywhere).
    A name that does not resolve is left to the HTTP client, which reports it as a connection error."""
    problem = host_problem(url)
    if problem:
        return problem
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        infos = socket.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80),
                                   type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    for info in infos:
        address = str(info[4][0])
        if _forbidden_address(address):
            return (f"{host} resolves to {address}, a link-local or cloud metadata address, never a model server")
    return None
