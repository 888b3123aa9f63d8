"""Leases counted in a Redis sorted set that every process shares: at most ``limit`` at once, each lapsing at its
score (a holder that died frees its place by itself). Taken and counted in one Lua script, so two processes never
both take the last place. Used for a model's calls at once (annotate.quotas) and a person's open WebSockets
(annotate.server.ws_limits)."""

from __future__ import annotations

import math
import time

import redis

# Drop lapsed leases, then take one if a place is free: KEYS[1] the set; ARGV: now, lapses_at, limit, token.
# Answers {1, lapses_at} when taken, else {0, when the first lease lapses}.
_TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, first[2]}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) - tonumber(ARGV[1])) + 60)
return {1, ARGV[2]}
"""


def lease_take(client: redis.Redis, key: str, *, limit: int, lapses_in: float, token: str) -> tuple[bool, float]:
    """(taken, when): ``when`` is the lease's lapse time if taken, else when the first lease holding a place lapses
    (time.time() seconds)."""
    now = time.time()
    taken, when = client.eval(_TAKE, 1, key, now, now + lapses_in, limit, token)
    return bool(taken), float(when)


def lease_renew(client: redis.Redis, key: str, *, lapses_in: float, token: str) -> None:
    """Push a held lease's lapse time on (a long holder renews before it lapses); a lapsed one is not taken again."""
    client.zadd(key, {token: time.time() + lapses_in}, xx=True)
    client.expire(key, math.ceil(lapses_in) + 60)


def lease_release(client: redis.Redis, key: str, token: str) -> None:
    client.zrem(key, token)


def leases_held(client: redis.Redis, key: str) -> int:
    return int(client.zcount(key, time.time(), "+inf"))
