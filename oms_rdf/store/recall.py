"""Recall: the beliefs whose texts best match a question (BM25 over their words)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from itertools import islice
from typing import Any

import pyoxigraph as ox

from ..codec.grain import Grain
from ..codec.schema import BELIEF
from ..errors import SchemaError
from ..rdf.inforce import held
from ..rdf.mapping import address_of, grain_iri, millis_literal
from ..rdf.tables import GrainList
from ..rdf.vocab import OMS, RDF
from .audit import current_head
from .core import Core
from .knowledge import check_held
from .lookup import in_force
from .questions import Questions, namespaces_of
from .search import SearchIndex, search_texts
from .state import TimeLike, millis_or_now

# xsd:boolean's lexical forms of true: Virtuoso answers an EXISTS with 1.
_TRUE = frozenset({"true", "1"})

# Beliefs another client added that a search looks up one by one (on a server, a
# round trip each); more are read with every blob at once.
_LOOKUPS = 64


class Recall:
    """Full-text search over the beliefs, kept up with every write."""

    def __init__(self, core: Core, questions: Questions) -> None:
        self.core = core
        self.questions = questions  # the point of now

    def search(
        self,
        text: str,
        /,
        *,
        namespace: str | Sequence[str] | None = None,
        limit: int = 10,
        valid_at: TimeLike = None,
        as_of: TimeLike = None,
        held: bool = False,
    ) -> GrainList:
        """Return the beliefs whose subject, relation or object best match ``text``.

        Ranked by BM25 over the words of the three texts. With no time, only the
        beliefs in force now on both axes (a superseded or retracted wording, or
        one whose valid time has ended, never comes back; ``held=True`` keeps
        those held now whatever their valid time); with ``valid_at``/``as_of``,
        those :meth:`beliefs` answers for that point.

        >>> from oms_rdf import Belief, GrainStore
        >>> store = GrainStore()
        >>> _ = store.put(Belief("rate limiter", "uses", "token bucket", 0.9, created_at=1))
        >>> _ = store.put(Belief("cache", "uses", "LRU eviction", 0.9, created_at=2))
        >>> [g["subject"] for g in store.search("which rate limiter")]
        ['rate limiter']
        """
        if limit < 1:
            raise SchemaError(f"limit must be at least 1, not {limit}", path="limit")
        check_held(held, valid_at, as_of)
        if valid_at is None and as_of is None and not held:
            valid_at = as_of = self.questions.now_point()
        timed = valid_at is not None or as_of is not None
        held_at = None if timed else self.questions.held_point()
        valid = millis_or_now(valid_at, self.core.clock, "valid_at") if timed else 0
        known = millis_or_now(as_of, self.core.clock, "as_of") if timed else 0
        wanted = None if namespace is None else set(namespaces_of(namespace))
        index = self._search_index()
        found: list[Grain] = []
        ranked = (address for address, _score in index.ranked(text))
        while len(found) < limit and (batch := list(islice(ranked, limit))):
            stored = self._stored(batch, held_at)
            for address in batch:
                if address not in stored:
                    continue  # indexed by a write that failed, or erased since
                blob, closed = stored[address]
                if timed:
                    node = grain_iri(address)
                    if not in_force(
                        self.core.backend, node, valid_at=valid, as_of=known
                    ):
                        continue
                elif closed:
                    continue
                grain = self.core.grain_of(address, blob)
                if wanted is not None and grain.namespace not in wanted:
                    continue
                found.append(grain)
                if len(found) == limit:
                    break
        return GrainList(found, self.core.status)

    def _stored(
        self, addresses: Sequence[str], held_at: int | None = None
    ) -> dict[str, tuple[Any, bool]]:
        """The blob of each of these grains the store holds, and whether the grain
        is out of the knowledge held (superseded, retracted or contradicted; at
        ``held_at``, see :func:`.inforce.held`): one query."""
        nodes = " ".join(str(grain_iri(a)) for a in addresses)
        at = None if held_at is None else str(millis_literal(held_at))
        rows = self.core.backend.query(
            f"SELECT ?g ?blob ?held WHERE {{ VALUES ?g {{ {nodes} }} "
            f"GRAPH {OMS.blobs} {{ ?g {OMS.blob} ?blob }} "
            # The grain's own triple gives the group a pattern: Virtuoso 7.2 finds
            # a NOT EXISTS alone in a group true whatever it matches.
            f"BIND (EXISTS {{ ?g {OMS.systemFrom} ?entered . {held('?g', at=at)} }} "
            "AS ?held) }"
        )
        return {
            address_of(row["g"]): (row["blob"], row["held"].value not in _TRUE)
            for row in rows
        }

    def reindex(self) -> None:
        """Rebuild the search index from the grain layer (done on the next search)."""
        self.core.search_index = None

    def _search_index(self) -> SearchIndex:
        """The search index, holding every belief the store holds.

        Where other processes write too (``backend.shared``), it is brought up to
        date whenever the audit chain's head moved since it was last: every write,
        by any client, moves it. Reading the head first means a write that lands
        during the update moves it again, for the next search to see.
        """
        core = self.core
        with core.lock:
            index = core.search_index
            shared = core.backend.shared
            head = current_head(core.backend) if shared else None
            if index is None or (shared and index.head != head):
                index = index or SearchIndex()
                self._index_missing(index)
                index.head = head
                core.search_index = index
            return index

    def _index_missing(self, index: SearchIndex) -> None:
        """Add the beliefs the store holds that ``index`` lacks: each by its own
        lookup when they are few, else from one read of every blob."""
        backend = self.core.backend
        if len(index):
            missing = dict.fromkeys(
                address_of(q.subject)
                for q in backend.quads(None, RDF.subject, None, ox.DefaultGraph())
                if isinstance(q.subject, ox.NamedNode)
                and address_of(q.subject) not in index
            )
            if len(missing) <= _LOOKUPS:
                for address in missing:
                    index.add(address, search_texts(self.core.get(address)))
                return
        for quad in backend.quads(None, OMS.blob, None, OMS.blobs):
            address = address_of(quad.subject)  # type: ignore[arg-type]
            if address not in index:
                blob = base64.b64decode(quad.object.value)  # type: ignore[union-attr]
                grain = Grain.stored(blob, address)
                if grain.type_byte == BELIEF.byte:
                    index.add(address, search_texts(grain))
