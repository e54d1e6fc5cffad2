"""The import plan of a JSON Lines source: one grain a line, its index state beside it."""

from __future__ import annotations

import io as _io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

from ..codec.grain import Grain
from ..errors import DecodeError, ErrorCode, OmsError
from ..rdf.mapping import Row
from ..store import BulkImport
from .jsonl import loads_json_grain
from .manifest import state_from_manifest
from .plans import Known, TwoPassError, check_same_state, closes, fits_one_pass, knowing
from .records import ImportReport, Item, fail_or_skip
from .sources import MAX_LINE, Counting, Progress, bounded_lines

__all__ = ["plan_jsonl"]


@contextmanager
def plan_jsonl(
    target: BulkImport,
    reopen: Callable[[], IO[bytes]],
    report: ImportReport,
    skip: bool,
    progress: Progress,
    *,
    at_once: bool = False,
) -> Iterator[Callable[[], Iterator[Item]]]:
    """Check every line, then write the new grains in a second pass.

    ``at_once``: check and write in one pass, for a store that holds no grain, where
    the journal undoes a refusal found at the end in one cheap step. Rows are then
    written as they are read; a grain on two lines raises :class:`TwoPassError`.
    """
    plan = _JsonlPlan(target, reopen, report, skip, progress, at_once=at_once)
    if at_once:
        yield plan.as_read
    else:
        plan.check()
        yield plan.rows


class _JsonlPlan:
    """The grains of a JSON Lines source: checked in a first read, written after."""

    def __init__(
        self,
        target: BulkImport,
        reopen: Callable[[], IO[bytes]],
        report: ImportReport,
        skip: bool,
        progress: Progress,
        *,
        at_once: bool,
    ) -> None:
        self.store, self.reopen, self.progress = target.store, reopen, progress
        self.report, self.skip = report, skip
        self.bad: set[int] = set()  # numbers of the lines refused (and skipped)
        self.fresh: set[str] = set()  # the new grains, to be added
        self.states: dict[str, list[Row]] = {}  # index state of the lines ("$index")
        self.signatures: dict[str, Any] = {}  # envelopes of signed grains ("$envelope")
        # The first pass's grains, while they fit in memory (one pass keeps none).
        self.kept: list[Grain] | None = None if at_once else []
        self.kept_bytes = 0
        self.policies = target.policies()
        self.known = Known(target, report)

    def grains(self, check: bool) -> Iterator[Grain]:
        """The source's grains, in its order; ``check``: the first read, which
        notes index states and keeps grains while they fit."""
        if not check and self.kept is not None:
            yield from self.kept  # one pass was enough
            return
        with self.reopen() as raw:
            stream = _io.BufferedReader(Counting(raw, self.progress if check else None))
            for number, data in enumerate(bounded_lines(stream), 1):
                if not data.strip() or number in self.bad:
                    continue
                grain = self._grain(number, data, check)
                if grain is None:
                    continue
                if check and self.kept is not None:
                    self._keep(grain)
                yield grain

    def _grain(self, number: int, data: bytes, check: bool) -> Grain | None:
        """The grain of one line, or None for a bad line (reported, or raised)."""
        try:
            if len(data) > MAX_LINE:
                raise DecodeError(
                    f"a line of JSON Lines holds one grain, at most {MAX_LINE} "
                    "bytes; this one is longer",
                    code=ErrorCode.RANGE,
                )
            fields, entry = loads_json_grain(_utf8(data))
            grain, signature = self.store.accept(fields)
            if signature is not None:
                self.signatures[grain.address] = signature
            if check and entry is not None:
                state = state_from_manifest(grain.address, entry)
                self.states[grain.address] = state
                for row in state:
                    self.policies.index(grain.address, row[1], row[2])
        except OmsError as exc:
            self.bad.add(number)
            fail_or_skip(self.report, self.skip, f"line {number}", exc)
            return None
        return grain

    def _keep(self, grain: Grain) -> None:
        assert self.kept is not None
        self.kept_bytes += len(grain.blob)
        if fits_one_pass(len(self.kept), self.kept_bytes):
            self.kept.append(grain)
        else:
            self.kept = None  # past what one read may hold: read again to write

    def _closed(self, address: str) -> bool:
        return closes(self.states.get(address, ()))

    def rows_of(self, grain: Grain) -> Iterator[Row]:
        """The rows of one new grain: its own, then the index state its line gave."""
        state = self.states.get(grain.address, ())
        signature = self.signatures.get(grain.address)
        yield from knowing(self.store.rows_for(grain, signature), closes(state))
        yield from state

    def as_read(self) -> Iterator[Row]:
        """Check and give the rows in one read (see :func:`plan_jsonl`)."""
        for grain in self.known.new(self.grains(check=True)):
            if grain.address in self.fresh:
                raise TwoPassError(f"grain {grain.address[:12]}… is on two lines")
            self.fresh.add(grain.address)
            self.policies.see(grain)
            yield from self.rows_of(grain)
        for address, exc in self.policies.refused(self._closed):
            fail_or_skip(self.report, self.skip, f"grain {address[:12]}…", exc)
        self.report.added = len(self.fresh)

    def check(self) -> None:
        """The first read of two: every line, every state, put's policies."""
        for grain in self.known.new(self.grains(check=True)):
            if grain.address not in self.fresh:
                self.fresh.add(grain.address)
                self.policies.see(grain)
        for address, state in self.states.items():
            if address not in self.fresh and address not in self.known.tombstones:
                check_same_state(self.store, address, state)
        for address, exc in self.policies.refused(self._closed):
            self.fresh.discard(address)
            fail_or_skip(self.report, self.skip, f"grain {address[:12]}…", exc)
        self.report.added = len(self.fresh)

    def rows(self) -> Iterator[Row]:
        """The second read: the rows of the new grains, each once."""
        written: set[str] = set()
        for grain in self.grains(check=False):
            if grain.address in self.fresh and grain.address not in written:
                written.add(grain.address)
                yield from self.rows_of(grain)


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"not UTF-8: byte {data[exc.start]:#04x} at column {exc.start + 1}"
        ) from None
