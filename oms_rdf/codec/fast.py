"""The fast path for flat grains whose every value is already canonical.

Most grains an agent writes have the same handful of keys, each holding ASCII
text, a float in range or epoch milliseconds; an adopted RDF literal adds a
``context`` map of a few ASCII texts (its datatype or language). For such a
grain the walk would only confirm what one type test per field can: nothing to
convert, nothing to report. So for each set of keys seen, a plan is made once: the fields in wire
order, the test each value must pass, and whether the key set can take this path
at all. A grain that fails any test takes the full walk instead, which converts
what it can and raises with the path when it cannot. The fast path never refuses
a value itself, and the cross-field rules after it are the same on both paths,
so both give the same bytes and the same errors.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from enum import IntEnum
from typing import Any, NamedTuple

import msgpack

from .fieldmap import INDEX_FIELDS, Kind, Table
from .schema import GrainType
from .walk import INT_MIN, TIME_HIGH, UINT_MAX

_MAX_PLANS = 1024  # key sets remembered per type and direction; agents use a few


_local = threading.local()


def pack(value: Any, /) -> bytes:
    """Pack with this thread's reusable packer (a third faster than ``packb``).

    The stock packer writes smallest integers and float64 and keeps dict order,
    which is all canonical form needs from it.
    """
    try:
        packer = _local.packer
    except AttributeError:
        packer = _local.packer = msgpack.Packer(use_bin_type=True)
    try:
        out: bytes = packer.pack(value)
    except BaseException:
        packer.reset()  # a failed pack may leave a partial map in the buffer
        raise
    return out


class Test(IntEnum):
    """What a value must already be for the fast path to take it as it is."""

    TEXT = 0  # ASCII str: NFC by construction, no BOM possible
    UNIT = 1  # float in [0, 1]
    TIME = 2  # int in [0, u32 seconds in ms]
    FLOAT = 3  # finite float
    NONNEG = 4  # finite float >= 0
    COUNT = 5  # int in [0, 2**64)
    INT = 6  # int in [-2**63, 2**64)
    BOOL = 7
    BYTE = 8  # int in [0, 255]
    ADDRS = 9  # list of content addresses (64 lowercase hex digits)
    TEXTS = 10  # map of ASCII text to ASCII text (a free map: context, metadata)


_TESTS: Mapping[Kind, Test] = {
    Kind.STR: Test.TEXT,
    Kind.OBJECT: Test.TEXT,  # a map object takes the walk
    Kind.UNIT: Test.UNIT,
    Kind.TIME: Test.TIME,
    Kind.FLOAT: Test.FLOAT,
    Kind.NONNEG: Test.NONNEG,
    Kind.COUNT: Test.COUNT,
    Kind.INT: Test.INT,
    Kind.BOOL: Test.BOOL,
    Kind.BYTE: Test.BYTE,
    Kind.ADDRS: Test.ADDRS,  # derived_from: on every derived or superseding grain
    Kind.MAP: Test.TEXTS,  # only a map without a field map of its own
}


class Plan(NamedTuple):
    """The fields of one key set, grouped by test so that each loop is tight."""

    order: tuple[tuple[str, str], ...]  # (source key, target key) in output order
    in_order: bool  # the source keys come in output order (decoding)
    texts: tuple[str, ...]
    units: tuple[str, ...]
    times: tuple[str, ...]
    others: tuple[tuple[str, Test], ...]
    targets: tuple[str, ...]  # the target keys of ``order``
    nonempty: tuple[str, ...]  # required fields: "" takes the walk (ERR_EMPTY)
    enums: tuple[tuple[str, frozenset[str]], ...]  # closed sets
    lists: tuple[
        tuple[str, str], ...
    ]  # (source, target) of lists, copied when encoding
    maps: tuple[
        tuple[str, str], ...
    ]  # (source, target) of maps: sorted when encoding, proven sorted when decoding


_plans: dict[tuple[bool, int], dict[tuple[str, ...], Plan | None]] = {}


def plan_for(gtype: GrainType, keys: tuple[str, ...], *, encoding: bool) -> Plan | None:
    """Return the plan for a top-level map with these keys, or None for the walk.

    Encoding plans take full names to short keys in wire (sorted) order; decoding
    plans take short keys, already proven sorted, to full names.
    """
    plans = _plans.get((encoding, gtype.byte))
    if plans is None:
        plans = _plans[encoding, gtype.byte] = {}
    try:
        return plans[keys]
    except KeyError:
        pass
    if len(plans) >= _MAX_PLANS:
        plans.clear()
    plan = plans[keys] = _make_plan(gtype.table, keys, encoding)
    return plan


def _make_plan(table: Table, keys: tuple[str, ...], encoding: bool) -> Plan | None:
    # A grain type's table has no whole-map check (only nested tables do).
    names = table.by_full if encoding else table.by_short
    fields = []
    for key in keys:
        f = names.get(key)
        if (
            f is None
            or f.full in INDEX_FIELDS
            or f.kind not in _TESTS
            or f.nested is not None
        ):
            return None  # unknown, index-layer or nested: the walk keeps or refuses
        fields.append(f)
    if not {f.full for f in fields}.issuperset(table.required):
        return None  # the walk names the missing field
    if encoding:
        # Wire order: short keys sorted by code point (= UTF-8 byte order).
        fields.sort(key=lambda f: f.short)
    elif list(keys) != sorted(keys):
        return None  # the walk reports the order
    source = {f.full: f.full if encoding else f.short for f in fields}

    def having(test: Test) -> tuple[str, ...]:
        return tuple(source[f.full] for f in fields if _TESTS[f.kind] is test)

    simple = (Test.TEXT, Test.UNIT, Test.TIME)
    return Plan(
        order=tuple(
            (f.full, f.short) if encoding else (f.short, f.full) for f in fields
        ),
        in_order=not encoding,
        targets=tuple(f.short if encoding else f.full for f in fields),
        texts=having(Test.TEXT),
        units=having(Test.UNIT),
        times=having(Test.TIME),
        others=tuple(
            (source[f.full], _TESTS[f.kind])
            for f in fields
            if _TESTS[f.kind] not in simple
        ),
        nonempty=tuple(source[f.full] for f in fields if f.full in table.required),
        enums=tuple(
            (source[f.full], table.enums[f.full])
            for f in fields
            if f.full in table.enums
        ),
        # The caller keeps its lists; the grain gets its own, as from the walk.
        lists=tuple(
            (f.full, f.short) for f in fields if encoding and f.kind is Kind.ADDRS
        ),
        maps=tuple(
            (source[f.full], f.short if encoding else f.full)
            for f in fields
            if f.kind is Kind.MAP
        ),
    )


def run_plan(plan: Plan, src: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the mapped copy of ``src`` if every value passes, else None."""
    for key in plan.texts:
        value = src[key]
        if type(value) is not str or not value.isascii():
            return None
    for key in plan.units:
        value = src[key]
        if type(value) is not float or not 0.0 <= value <= 1.0:
            return None
    for key in plan.times:
        value = src[key]
        if type(value) is not int or not 0 <= value <= TIME_HIGH:
            return None
    for key, test in plan.others:
        if not _passes(test, src[key]):
            return None
    for key in plan.nonempty:
        if src[key] == "":
            return None
    for key, allowed in plan.enums:
        if src[key] not in allowed:
            return None
    if plan.in_order:  # the plan was made for exactly these keys in this order
        for key, _ in plan.maps:
            inner = list(src[key])
            if inner != sorted(inner):
                return None  # the walk reports the order
        return dict(zip(plan.targets, src.values(), strict=True))
    out = {target: src[source] for source, target in plan.order}
    for source, target in plan.lists:
        out[target] = list(src[source])
    for source, target in plan.maps:
        # Wire order: code-point order of ASCII keys is their UTF-8 byte order.
        out[target] = dict(sorted(src[source].items()))
    return out


def _passes(test: Test, value: Any) -> bool:
    t = type(value)
    if test is Test.BOOL:
        return t is bool
    if test is Test.ADDRS:
        return t is list and all(map(_is_address, value))
    if test is Test.TEXTS:
        return t is dict and all(map(_is_ascii_text, value.items()))
    if test is Test.FLOAT or test is Test.NONNEG:
        if t is not float:
            return False
        real: float = value
        return math.isfinite(real) and (test is Test.FLOAT or real >= 0.0)
    if t is not int:
        return False
    number: int = value
    if test is Test.COUNT:
        return 0 <= number <= UINT_MAX
    if test is Test.BYTE:
        return 0 <= number <= 255
    return INT_MIN <= number <= UINT_MAX


def _is_ascii_text(item: tuple[Any, Any]) -> bool:
    key, value = item
    return type(key) is str and type(value) is str and key.isascii() and value.isascii()


def _is_address(value: Any) -> bool:
    if type(value) is not str or len(value) != 64:
        return False
    try:
        return bytes.fromhex(value).hex() == value  # lowercase hex, nothing else
    except ValueError:
        return False
