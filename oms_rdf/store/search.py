"""Recall: ranked text search (BM25) over the subject, relation and object of beliefs.

The index is derived: it is built from the grain layer on the first search, every
new grain the store maps is added to it, and an import that restores quads
directly marks it for a rebuild. It may hold grains that a failed write never
stored, or that left the knowledge since: a search checks every hit against the
store at the point asked for, so a superseded or retracted wording never comes
back. Memory is a posting per distinct word of a belief (an int key, an int
count) and the belief's length.

>>> index = SearchIndex()
>>> index.add("a" * 64, ["rate limiter", "uses", "token bucket"])
>>> index.add("b" * 64, ["cache", "uses", "LRU"])
>>> [address[:1] for address, _ in index.ranked("rate limiter")]
['a']
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator

from ..codec.grain import Grain

__all__ = ["SearchIndex", "fold", "search_texts", "words"]

_WORD = re.compile(r"\w+", re.UNICODE)
K1, B = 1.2, 0.75  # the usual BM25 constants


def fold(text: str) -> str:
    """Return text as the index compares it: case and accents folded.

    Compatibility decomposition (NFKD) splits "é" into "e" and its accent and
    writes "ﬁ" as "fi"; the accents (combining marks) go, then case is folded.
    The index and the query go through the same fold, so "cafe" finds "Café".

    >>> fold("Café ﬁne STRASSE Straße")
    'cafe fine strasse strasse'
    """
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return bare.casefold()


def words(text: str) -> list[str]:
    """Return the words of a text, folded (IRIs split at their punctuation)."""
    return _WORD.findall(fold(text))


def search_texts(grain: Grain) -> list[str]:
    """The texts a belief is found by: its subject, relation and object."""
    fields = grain.fields
    obj = fields.get("object")
    return [
        str(fields.get("subject", "")),
        str(fields.get("relation", "")),
        obj
        if isinstance(obj, str)
        else json.dumps(obj, ensure_ascii=False, default=str),
    ]


class SearchIndex:
    """An inverted index of belief texts with BM25 ranking."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._addresses: list[str] = []
        self._lengths: list[int] = []
        self._postings: dict[str, dict[int, int]] = {}
        self._total = 0  # words in all documents, for the average length
        # The audit chain's head when the index last caught up with the store
        # (questions.py): on a store other processes write, a moved head means
        # beliefs may have come in that the index lacks.
        self.head: object = None

    def __len__(self) -> int:
        return len(self._addresses)

    def __contains__(self, address: object) -> bool:
        return address in self._ids

    def add(self, address: str, texts: Iterable[str]) -> None:
        """Index a belief's texts under its address (once; again is a no-op)."""
        if address in self._ids:
            return
        doc = len(self._addresses)
        self._ids[address] = doc
        self._addresses.append(address)
        counts: dict[str, int] = {}
        for text in texts:
            for word in words(text):
                counts[word] = counts.get(word, 0) + 1
        length = sum(counts.values())
        self._lengths.append(length)
        self._total += length
        for word, count in counts.items():
            self._postings.setdefault(word, {})[doc] = count

    def ranked(self, query: str) -> Iterator[tuple[str, float]]:
        """Yield (address, BM25 score) for the documents sharing a word, best first.

        Words in more than half the documents say little (their idf is near 0) and
        cost most; they count only when the query has nothing rarer.
        """
        n = len(self._addresses)
        if n == 0:
            return
        average = self._total / n or 1.0
        lengths = self._lengths
        terms = [
            (len(postings), postings)
            for word in dict.fromkeys(words(query))
            if (postings := self._postings.get(word))
        ]
        rare = [t for t in terms if t[0] <= n / 2]
        scores: dict[int, float] = {}
        for df, postings in sorted(rare or terms, key=lambda t: t[0]):
            idf = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
            lift, base, slope = idf * (K1 + 1), K1 * (1 - B), K1 * B / average
            get = scores.get
            for doc, count in postings.items():
                scores[doc] = get(doc, 0.0) + lift * count / (
                    count + base + slope * lengths[doc]
                )
        # Ties by address: the same order whatever order the index was built in.
        found = [(self._addresses[doc], score) for doc, score in scores.items()]
        yield from sorted(found, key=lambda item: (-item[1], item[0]))
