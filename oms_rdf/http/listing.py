"""``GET /v1/facts`` pages: what a listing asks, pinned at a point in time, carried
from page to page by an opaque cursor.

A listing of a subject, or by status, is read once and its order kept for its
next pages (a few listings). Any other listing (every fact, or those of a
relation or a namespace) is read as it is paged, so that a page costs its rows
whatever the size of the store: its order is that of the store's index of
candidate grains (a relation's, a namespace's, else every grain with a
confidence), each kept when it is in force at the listing's point (the same
conditions as ``beliefs()``, by pattern lookups). A cursor names the last fact
it gave, and the next page starts after it: a write or an erasure between
pages moves no fact from one page to another. A page deep in a large listing
reads the candidates' order once, then keeps it (a few listings).

>>> asked = Listing.of({"subject": "alice"}, now=1_700_000_000_000)
>>> Listing.read(asked.at(100).cursor()) == asked.at(100)
True
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Generic, TypeVar

import pyoxigraph as ox

from ..errors import SchemaError
from ..rdf.mapping import address_of, grain_iri, relation_pattern
from ..rdf.vocab import OMS
from ..store import GrainStore
from ..store.audit import current_head
from ..store.lookup import in_force
from .auth import Token
from .bodies import param_millis

__all__ = ["LISTINGS_KEPT", "STREAMED", "Listing", "Listings"]

LISTINGS_KEPT = 8  # listings whose order is kept for their next pages
STREAMED = 1_000  # candidates a page passes, from the first, before the kept order
_DEFAULT = ox.DefaultGraph()


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
    after: str | None = None  # the last fact given (a listing read as paged)
    upcoming: str | None = None  # the first fact of the next page
    position: int = 0  # how many candidates the pages have passed
    written: str = ""  # the store's last write when the first page was read

    @classmethod
    def of(cls, q: Mapping[str, str], now: int, written: str = "") -> Listing:
        """Return the listing a first page's query parameters ask, pinned at ``now``
        when they name no time (a status listing has no time), and at the store's
        last write (``written``): a kept order answers the pages of one listing,
        never a listing asked again after a write.

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
            pinned if valid_at is None else param_millis(valid_at, "valid_at"),
            pinned if as_of is None else param_millis(as_of, "as_of"),
            written=written,
        )

    def agreeing(self, q: Mapping[str, str]) -> Listing:
        """This listing (a cursor's), when the query parameters sent with its
        cursor ask the same (a client may send them again); a cursor answers
        only the listing it pages.

        Raises:
            SchemaError: ERR_SCHEMA naming the first parameter that differs.
        """
        texts = {"subject": self.subject, "relation": self.relation,
                 "namespace": self.namespace, "status": self.status}  # fmt: skip
        for name, value in texts.items():
            if name in q and q[name] != value:
                raise SchemaError(
                    f"the cursor pages the listing of {name} {value!r}; found "
                    f"{q[name][:80]!r} (send the cursor alone, or ask anew)",
                    path=name,
                )
        for name, ms in (("valid_at", self.valid_at), ("as_of", self.as_of)):
            if name in q and param_millis(q[name], name) != ms:
                raise SchemaError(
                    f"the cursor pages the listing at {name} {ms} ms; found "
                    f"{q[name][:80]!r} (send the cursor alone, or ask anew)",
                    path=name,
                )
        return self

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
            text, _, seal = cursor.partition(".")
            data = base64.urlsafe_b64decode(text.encode("ascii") + b"==")
            given = base64.urlsafe_b64decode(seal.encode("ascii") + b"==")
            if not hmac.compare_digest(given, _sealed(data)):
                raise refused  # not one this server gave: its fields are not read
            listing = cls(**json.loads(data))
        except (ValueError, TypeError, UnicodeError, binascii.Error):
            raise refused from None
        texts = (listing.subject, listing.relation, listing.namespace, listing.status)
        times = (listing.valid_at, listing.as_of)
        counts = (listing.offset, listing.position)
        if (
            not all(
                t is None or isinstance(t, str)
                for t in (*texts, listing.after, listing.upcoming)
            )
            or not isinstance(listing.written, str)
            or not all(t is None or type(t) is int for t in times)
            or not all(type(n) is int and n >= 0 for n in counts)
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
            self.written,
        )

    def at(self, offset: int) -> Listing:
        """Return the same listing from another page's start."""
        return replace(self, offset=offset)

    def cursor(self) -> str:
        """Return the opaque text that asks for this page, sealed by the server
        (a cursor is its listing, and the seal that it was given)."""
        data = json.dumps(asdict(self), separators=(",", ":")).encode()
        return ".".join(
            base64.urlsafe_b64encode(part).decode("ascii").rstrip("=")
            for part in (data, _sealed(data))
        )


# The key of this process's cursor seals (its query workers are forks, which
# share it): a cursor from another server, or from before a restart, is refused.
_CURSOR_KEY = secrets.token_bytes(32)


def _sealed(data: bytes) -> bytes:
    return hmac.new(_CURSOR_KEY, data, hashlib.sha256).digest()[:16]


V = TypeVar("V")


class Recent(Generic[V]):
    """The values of the last few keys asked, the oldest dropped first; made
    outside the lock, so a slow one holds up no other key."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        """Return the value of ``key``, made by ``make()`` if it is not kept."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = make()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        return value


class Listings:
    """The order of the few listings paged last, by question and token scope."""

    def __init__(
        self,
        store: GrainStore,
        *,
        kept: int = LISTINGS_KEPT,
        streamed: int = STREAMED,
    ) -> None:
        self.store, self.kept, self.streamed = store, kept, streamed
        self._orders: Recent[list[str]] = Recent(kept)
        self._scans: Recent[tuple[list[str], dict[str, int]]] = Recent(kept)

    def written(self) -> str:
        """What names the store's writes so far: its audit chain's head (every
        write is audited), for :meth:`Listing.of`."""
        head = current_head(self.store.backend)
        return "" if head is None else f"{head.sequence}.{head.hash}"

    def page(
        self, token: Token, asked: Listing, limit: int
    ) -> tuple[list[str], Listing | None]:
        """Return the addresses of a page of ``asked``, at most ``limit``, and
        the listing of the next page (None: this is the last)."""
        if (
            asked.subject is not None
            or asked.status is not None
            or self.store.backend.remote  # a lookup is a round trip: read once
        ):
            order = self.addresses(token, asked)
            start = asked.offset
            more = start + limit < len(order)
            return order[start : start + limit], asked.at(
                start + limit
            ) if more else None
        return self.scanned(token, asked, limit)

    def scanned(
        self, token: Token, asked: Listing, limit: int
    ) -> tuple[list[str], Listing | None]:
        """A page of a listing read as it is paged (see the module docstring)."""
        backend, point = self.store.backend, (asked.valid_at, asked.as_of)
        assert point[0] is not None and point[1] is not None  # pinned: no status
        found: list[str] = []
        position = asked.position
        for position, node in self._after(token, asked):
            if not self._wanted(token, asked, node) or not in_force(
                backend, node, valid_at=point[0], as_of=point[1]
            ):
                continue
            if len(found) == limit:  # one more in force: there is a next page
                after = replace(
                    asked,
                    after=found[-1],
                    upcoming=address_of(node),
                    position=position,
                )
                return found, after.at(asked.offset + limit)
            found.append(address_of(node))
        return found, None

    def _after(
        self, token: Token, asked: Listing
    ) -> Iterator[tuple[int, ox.NamedNode]]:
        """The candidates from the cursor's next fact on, with their positions:
        after its last fact given, or from the first of its next page when that
        was erased; from where they were when both were."""
        if asked.after is None or asked.upcoming is None:
            yield from enumerate(self._candidates(token, asked))
            return
        marks = {grain_iri(asked.after).value: 1, grain_iri(asked.upcoming).value: 0}
        if asked.position > self.streamed:
            nodes, index = self._scan(token, asked)
            found = [index[m] + skip for m, skip in marks.items() if m in index]
            begin = min(found) if found else asked.position
            for at in range(begin, len(nodes)):
                yield at, ox.NamedNode(nodes[at])
            return
        began = False
        for at, node in enumerate(self._candidates(token, asked)):
            if began:
                yield at, node
            elif node.value in marks:
                began = True
                if marks[node.value] == 0:
                    yield at, node
        if not began:  # both erased: from where they were
            for at, node in enumerate(self._candidates(token, asked)):
                if at >= asked.position:
                    yield at, node

    def _scan(self, token: Token, asked: Listing) -> tuple[list[str], dict[str, int]]:
        """The candidates of a listing in order, and their positions by node IRI:
        read once, kept."""

        def scan() -> tuple[list[str], dict[str, int]]:
            nodes = [n.value for n in self._candidates(token, asked)]
            return nodes, {n: at for at, n in enumerate(nodes)}

        return self._scans.get((*asked.key(), _scope(token)), scan)

    def _candidates(self, token: Token, asked: Listing) -> Iterator[ox.NamedNode]:
        """The grain nodes a listing may hold, in the order of the store's index:
        a relation's, a namespace's, else every grain with a confidence; for a
        token of some namespaces, of those only, so that a cursor's position and
        its marks count nothing else (a mark of another namespace is as unknown
        as an erased grain's)."""
        candidates = self._indexed(asked)
        if token.namespaces is None:
            return candidates
        bare = replace(asked, namespace=None)
        return (n for n in candidates if self._wanted(token, bare, n))

    def _indexed(self, asked: Listing) -> Iterator[ox.NamedNode]:
        """The candidates of the store's index, whoever asks."""
        backend = self.store.backend
        if asked.relation is not None:
            p, o = relation_pattern(asked.relation, self.store.settings)
        elif asked.namespace is not None:
            p, o = OMS.namespace, ox.Literal(asked.namespace)
        else:
            p, o = OMS.confidence, None
        for quad in backend.quads(None, p, o, _DEFAULT):
            if isinstance(quad.subject, ox.NamedNode):
                yield quad.subject

    def _wanted(self, token: Token, asked: Listing, node: ox.NamedNode) -> bool:
        """Whether a candidate is of the listing's namespace and the token's."""
        if asked.namespace is None and token.namespaces is None:
            return True
        backend = self.store.backend
        spaces = [q.object for q in backend.quads(node, OMS.namespace, None, _DEFAULT)]
        names = {t.value for t in spaces if isinstance(t, ox.Literal)}
        if asked.namespace is not None and asked.namespace not in names:
            return False
        return any(token.covers(n) for n in names)

    def addresses(self, token: Token, asked: Listing) -> list[str]:
        """Return the addresses a listing pages through, in order: read once for
        its pinned point, then kept (a few listings), so a page costs its rows."""
        return self._orders.get(
            (*asked.key(), _scope(token)), lambda: self._ordered(token, asked)
        )

    def _ordered(self, token: Token, asked: Listing) -> list[str]:
        """The addresses of a listing at its point, in order (read, not kept)."""
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
        return [g.address for g in grains if token.covers(g.namespace)]


def _scope(token: Token) -> tuple[str, ...] | None:
    return None if token.namespaces is None else tuple(sorted(token.namespaces))
