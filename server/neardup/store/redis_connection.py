"""The Redis store's connection: the store URL (redis://HOST:PORT/DB[?prefix=NAME], rediss:// for TLS) read into a
client and the store's key names, the password and CA from the environment, and Redis errors reported as
StoreUnavailable."""
from __future__ import annotations

import functools
import os
from typing import Iterable
from urllib.parse import parse_qs, urlsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from ..core.errors import InvalidArgument, StoreUnavailable

PASSWORD_ENV, CA_ENV = "NEARDUP_REDIS_PASSWORD", "NEARDUP_REDIS_CA"
#: Seconds a request-path read may take, and a write batch (its EXEC runs every write of the batch, one
#: postings bucket after another; Redis serves no other client meanwhile), before the store counts as unavailable.
TIMEOUT, WRITE_TIMEOUT = 5.0, 120.0


def redis_errors(method):
    """Redis down, unreachable or refusing (no auth, out of memory): StoreUnavailable, naming the store."""
    @functools.wraps(method)
    def reported(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except redis.RedisError as error:
            raise StoreUnavailable(f"store {self.location}: Redis failed ({type(error).__name__}: {error})") \
                from None
    return reported


class Keys:
    def __init__(self, prefix: str):
        tag = "{" + prefix + "}:"
        self.meta, self.generation, self.log = tag + "meta", tag + "generation", tag + "log"
        self.sketches, self.docnos, self.ids = tag + "sketches", tag + "docnos", tag + "ids"
        self.clusters = tag + "clusters"
        self.turn = tag + "turn"  # a writer's, while it holds the others back (RedisStore._write)
        self._bucket = (tag + "postings:").encode()
        self.all = (self.meta, self.generation, self.log, self.sketches, self.docnos, self.ids, self.clusters)

    def buckets(self, keys: Iterable[bytes]) -> list[bytes]:
        """The Redis keys of these postings buckets (store/buckets.py's keys)."""
        return [self._bucket + key for key in keys]


def connect(url: str) -> tuple[redis.Redis, Keys, str]:
    """A client for the store at url, its keys, and the url as messages show it."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if parts.password is not None:
        raise InvalidArgument(f"a password in the store URL is visible to every user of the host: put it in "
                              f"${PASSWORD_ENV} instead")
    if set(query) - {"prefix"} or len(query.get("prefix", [""])) != 1:
        raise InvalidArgument(f"a redis store URL takes one option, ?prefix=NAME; got {parts.query!r}")
    prefix = query.get("prefix", ["neardup"])[0]
    try:
        db = int(parts.path.strip("/") or 0)
        port = parts.port or 6379
    except ValueError:
        raise InvalidArgument(f"a redis store URL is redis://HOST:PORT/DB (DB a number); got {url!r}") from None
    if not parts.hostname or not prefix or any(char in prefix for char in "{}"):
        raise InvalidArgument(f"a redis store URL is redis://HOST:PORT/DB[?prefix=NAME] (NAME without braces); "
                              f"got {url!r}")
    tls = parts.scheme == "rediss"
    client = redis.Redis(
        host=parts.hostname, port=port, db=db, username=parts.username, password=os.environ.get(PASSWORD_ENV),
        ssl=tls, ssl_ca_certs=os.environ.get(CA_ENV) if tls else None,
        socket_timeout=WRITE_TIMEOUT, socket_connect_timeout=TIMEOUT,
        # a read after a Redis restart finds its pooled connection closed: a reconnect or two, quickly
        retry=Retry(ExponentialBackoff(cap=0.1, base=0.02), 2))
    shown = f"{parts.scheme}://{parts.hostname}:{port}/{db}" + (f"?prefix={prefix}" if "prefix" in query else "")
    return client, Keys(prefix), shown
