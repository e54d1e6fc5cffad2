"""``GET /v1/facts`` pages: what a listing asks, pinned at a point in time, carried
from page to page by an opaque cursor, its order kept for its next pages.

>>> asked = Listing.of({"subject": "alice"}, now=1_700_000_000_000)
>>> Listing.read(asked.at(100).cursor()) == asked.at(100)
True
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..errors import SchemaError
from ..store import GrainStore
from ..times import to_millis
from .auth import Token

__all__ = ["LISTINGS_KEPT", "Listing", "Listings"]

LISTINGS_KEPT = 8  # listings whose order is kept for their next pages


@dataclass(frozen=True)
class Listing:
    """What a listing asks, its point in time pinned when its first page was
    read, and where a page starts: what an opaque cursor carries. Pinned, every
    page answers the same question (a write after ``as_of`` changes no page)."""

    subject: str | None
    relation: str | None
    namespace: str | None
    status: str | None
    valid_at: int | None
    as_of: int | None
    offset: int = 0

    @classmethod
    def of(cls, q: Mapping[str, str], now: int) -> Listing:
        """Return the listing a first page's query parameters ask, pinned at ``now``
        when they name no time (a status listing has no time).

        Raises:
            SchemaError: ERR_SCHEMA for a time that is not one.
        """
        status = q.get("status")
        valid_at, as_of = q.get("valid_at"), q.get("as_of")
        pinned = None if status is not None else now
        if status is not None and (valid_at is not None or as_of is not None):
            raise SchemaError(
                "status lists by index status, whatever the times; give it without "
                "valid_at/as_of",
                path="status",
            )
        return cls(
            q.get("subject"),
            q.get("relation"),
            q.get("namespace"),
            status,
            pinned if valid_at is None else to_millis(valid_at, "valid_at"),
            pinned if as_of is None else to_millis(as_of, "as_of"),
        )

    @classmethod
    def read(cls, cursor: str) -> Listing:
        """Return the listing a cursor carries.

        Raises:
            SchemaError: ERR_SCHEMA for text no page answer gave.
        """
        refused = SchemaError(
            f"expected a next_cursor a page gave; found {cursor[:40]!r}",
            path="cursor",
        )
        try:
            fields = json.loads(
                base64.urlsafe_b64decode(cursor.encode("ascii") + b"==")
            )
            listing = cls(**fields)
        except (ValueError, TypeError, UnicodeError, binascii.Error):
            raise refused from None
        texts = (listing.subject, listing.relation, listing.namespace, listing.status)
        times = (listing.valid_at, listing.as_of)
        if (
            not all(t is None or isinstance(t, str) for t in texts)
            or not all(t is None or type(t) is int for t in times)
            or type(listing.offset) is not int
            or listing.offset < 0
        ):
            raise refused
        return listing

    def key(self) -> tuple[Any, ...]:
        """Return the question asked, whatever page: the key of its kept order."""
        return (
            self.subject,
            self.relation,
            self.namespace,
            self.status,
            self.valid_at,
            self.as_of,
        )

    def at(self, offset: int) -> Listing:
        """Return the same listing from another page's start."""
        return replace(self, offset=offset)

    def cursor(self) -> str:
        """Return the opaque text that asks for this page."""
        text = json.dumps(asdict(self), separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode("ascii").rstrip("=")


class Listings:
    """The order of the few listings paged last, by question and token scope."""

    def __init__(self, store: GrainStore, *, kept: int = LISTINGS_KEPT) -> None:
        self.store, self.kept = store, kept
        self._orders: OrderedDict[tuple[Any, ...], list[str]] = OrderedDict()
        self._lock = threading.Lock()

    def addresses(self, token: Token, asked: Listing) -> list[str]:
        """Return the addresses a listing pages through, in order: read once for
        its pinned point, then kept (a few listings), so a page costs its rows."""
        scope = None if token.namespaces is None else tuple(sorted(token.namespaces))
        key = (*asked.key(), scope)
        with self._lock:
            found = self._orders.get(key)
            if found is not None:
                self._orders.move_to_end(key)
                return found
        if asked.status is None:
            grains = self.store.beliefs(
                asked.subject,
                asked.relation,
                namespace=asked.namespace,
                valid_at=asked.valid_at,
                as_of=asked.as_of,
            )
        else:
            grains = self.store.beliefs_by_status(
                asked.status, asked.subject, asked.relation, namespace=asked.namespace
            )
        found = [g.address for g in grains if token.covers(g.namespace)]
        with self._lock:
            self._orders[key] = found
            while len(self._orders) > self.kept:
                self._orders.popitem(last=False)
        return found
