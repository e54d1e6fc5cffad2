"""The tombstones a `.mg` or JSON Lines backup carries, read before its grains."""

from __future__ import annotations

import io as _io
from collections.abc import Callable
from typing import IO, Any, cast

from ..errors import OmsError
from ..store import BulkImport
from .container import read_mg
from .jsonl import TOMBSTONE_MARK, loads_tombstone
from .records import ImportReport, fail_or_skip
from .sources import bounded_lines

# A blanked source is read a piece of a line at a time, never a whole long line.
_PIECE = 1 << 16


class Tombstones:
    """The tombstones a ``.mg`` or JSON Lines backup carries, read before its grains.

    An erased grain leaves a tombstone (its address and the time) so that no
    import brings it back; a backup made after an erasure carries it (a ``.mg``
    manifest entry ``{"oms_rdf:erased": T}``, a JSON line ``{"$erased": ..., "at":
    T}``), and restoring the backup writes it, so that an older backup imported
    next skips the grain. They are written first, in the import's journal (undone
    with it), so the grains of the same import are checked against them too. A
    tombstone for a grain the store holds is not written: an import never erases
    (as with TriG and N-Quads).
    """

    def __init__(self) -> None:
        self.erased: dict[str, int] = {}  # address -> epoch ms
        self.lines: set[int] = set()  # JSON Lines: the tombstones' line numbers

    @classmethod
    def read(
        cls,
        fmt: str,
        reopen: Callable[[], IO[bytes]],
        report: ImportReport,
        skip: bool,
    ) -> Tombstones:
        """The tombstones of a source (none unless ``fmt`` is mg or jsonl)."""
        found = cls()
        if fmt == "mg":
            with reopen() as raw:
                if len(head := raw.read(4)) == 4 and head[3] & 0x10:  # a manifest
                    with reopen() as again:
                        reader = read_mg(again, check=False)
                        for _ in reader.items():
                            pass
                        found.erased = reader.tombstones
        elif fmt == "jsonl":
            with reopen() as raw, _buffered(raw) as lines:
                for number, line in enumerate(bounded_lines(lines), 1):
                    if TOMBSTONE_MARK not in line:
                        continue
                    try:
                        tombstone = loads_tombstone(line.decode("utf-8", "replace"))
                    except OmsError as exc:
                        found.lines.add(number)  # skipped, or the import stops
                        fail_or_skip(report, skip, f"line {number}", exc)
                        continue
                    if tombstone is not None:
                        found.lines.add(number)
                        address, at = tombstone
                        found.erased[address] = max(at, found.erased.get(address, at))
        return found

    def bury(self, target: BulkImport) -> None:
        """Write the tombstones the store has not, for grains it does not hold."""
        target.bury(self.erased)

    def without_lines(self, reopen: Callable[[], IO[bytes]]) -> Callable[[], IO[bytes]]:
        """``reopen`` with the tombstone lines blanked (JSON Lines: the grain
        reader skips blank lines, and every other line keeps its number)."""
        if not self.lines:
            return reopen
        lines = frozenset(self.lines)
        return lambda: _Blanked(reopen(), lines)  # type: ignore[return-value]


def _buffered(raw: IO[bytes]) -> _io.BufferedReader:
    """A stream read through a buffer (a raw stream reads a line a byte at a
    time); closing it closes ``raw``, and it must be closed while ``raw`` is open."""
    return _io.BufferedReader(cast(Any, raw))


class _Blanked(_io.RawIOBase):
    """A JSON Lines source with some lines blanked: spaces, the same length."""

    def __init__(self, raw: IO[bytes], lines: frozenset[int]) -> None:
        self.source = _buffered(raw)
        self.lines, self.number, self.pending = lines, 0, b""
        self.starts = True  # whether the next piece read starts a line

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.pending:
            line = self.source.readline(_PIECE)
            if not line:
                return 0
            whole = line.endswith(b"\n")
            self.number += self.starts
            self.starts = whole  # the next piece starts a line when this ends one
            if self.number in self.lines:
                end = b"\n" if line.endswith(b"\n") else b""
                line = b" " * (len(line) - len(end)) + end
            self.pending = line
        data, self.pending = self.pending[: len(buffer)], self.pending[len(buffer) :]
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.source.close()  # and the source with it
        super().close()
