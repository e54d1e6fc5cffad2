"""SQL:2011 system-versioned tables: cases from MariaDB's test suite, answered by
the store through SPARQL at a system time and over ranges of it.

The statements and expected rows are the facts of MariaDB's
``mysql-test/suite/versioning/r/select.result`` (an independent implementation of
``FOR SYSTEM_TIME``). A row is a node with its columns as beliefs, valid from when
it was inserted, without end; a DELETE retracts them, so from then on they answer
for no valid time. Asked at valid time now:

- ``FOR SYSTEM_TIME AS OF t`` is ``as_of=t``;
- ``FROM a TO b`` (rows whose system period overlaps ``[a, b)``) is
  ``system_during=(a, b)``;
- ``BETWEEN a AND b`` (the end taken in) is ``system_during=(a, b + 1 ms)``;
- ``ALL`` is ``system_during=(None, None)``.

A row held in two system periods would be two solutions: each row here has one.
"""

from __future__ import annotations

from itertools import count
from typing import Any

import oms_rdf as oms

EX = "http://example.org/"
T0 = 1_700_000_000_000
SECOND = 1_000

# The first case: ten rows (x, 100 + x); @t0; delete x = 3; delete x > 7;
# insert (3, 33), whose row start is @t1.
ORIGINAL = [(x, 100 + x) for x in range(10)]
AS_OF_T0 = ORIGINAL  # "ASOF_x": the rows of the table as of @t0
FROM_TO = ORIGINAL  # "FROMTO_x": from timestamp '0-0-0 0:0:0' to timestamp @t1
BETWEEN_AND = [*ORIGINAL, (3, 33)]  # "BETWAND_x", and "ALL_x" the same
CURRENT = [(x, y) for x, y in ORIGINAL if x != 3 and x <= 7] + [(3, 33)]


class Table:
    """A system-versioned table of rows (a node each, a belief per column)."""

    def __init__(self, store: oms.GrainStore, name: str, columns: tuple[str, ...]):
        self.store, self.name, self.columns = store, name, columns
        self.rows: dict[int, tuple[tuple[int, ...], list[str]]] = {}
        self.ids = count()

    def insert(self, values: tuple[int, ...], at: int) -> None:
        n = next(self.ids)
        held = [
            self.store.put(
                {
                    "type": "belief",
                    "subject": f"{EX}{self.name}/row{n}",
                    "relation": f"{EX}{self.name}/{column}",
                    "object": str(value),
                    "confidence": 1.0,
                    "created_at": at,
                }
            )
            for column, value in zip(self.columns, values, strict=True)
        ]
        self.rows[n] = (values, held)

    def delete(self, where: Any, at: int) -> None:
        for n, (values, held) in list(self.rows.items()):
            if where(*values):
                for address in held:
                    self.store.retract(address, reason="delete from", at=at)
                del self.rows[n]


def select(store: oms.GrainStore, **times: Any) -> list[tuple[int, int]]:
    answer = store.query(
        f"SELECT ?x ?y WHERE {{ ?row <{EX}t1/x> ?x ; <{EX}t1/y> ?y }}", **times
    )
    return sorted((int(str(r["x"].value)), int(str(r["y"].value))) for r in answer)


def test_as_of_from_to_between_and_all() -> None:
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0], forward_only=True)
    t1 = Table(store, "t1", ("x", "y"))
    for row in ORIGINAL:
        t1.insert(row, T0)
    at_t0 = T0 + SECOND  # set @t0 = now(6)
    clock[0] = T0 + 2 * SECOND
    t1.delete(lambda x, y: x == 3, clock[0])
    clock[0] = T0 + 3 * SECOND
    t1.delete(lambda x, y: x > 7, clock[0])
    clock[0] = at_t1 = T0 + 4 * SECOND
    t1.insert((3, 33), at_t1)
    clock[0] = T0 + 5 * SECOND
    assert select(store) == sorted(CURRENT)
    assert select(store, as_of=at_t0) == sorted(AS_OF_T0)
    assert select(store, system_during=(None, at_t1)) == sorted(FROM_TO)
    assert select(store, system_during=(None, at_t1 + 1)) == sorted(BETWEEN_AND)
    assert select(store, system_during=(None, None)) == sorted(BETWEEN_AND)


# The second case: t1 (x, y) and t2 (x, y), @t0, then every row of both deleted;
# joined on x as of @t0 ("IJ2_x1", "LJ2_x1", "RJ2_x1").
T1_ROWS = [(1, 1), (1, 2), (1, 3), (4, 4), (5, 5)]
T2_ROWS = [(1, 2), (2, 1), (3, 1)]
INNER = [(1, 1, 1, 2), (1, 2, 1, 2), (1, 3, 1, 2)]
LEFT = [*INNER, (4, 4, None, None), (5, 5, None, None)]
RIGHT = [*INNER, (None, None, 2, 1), (None, None, 3, 1)]


def joined(store: oms.GrainStore, left: str, right: str, as_of: int) -> list[Any]:
    """t1 joined with t2 on x (``left``, ``right``: the group patterns of the
    two tables, one of them in an OPTIONAL for an outer join)."""
    answer = store.query(
        f"SELECT ?x1 ?y1 ?x2 ?y2 WHERE {{ {left} {right} }}", as_of=as_of
    )

    def number(term: Any) -> int | None:
        return None if term is None else int(str(term.value))

    return ordered(
        tuple(number(r[v]) for v in ("x1", "y1", "x2", "y2")) for r in answer
    )


def ordered(rows: Any) -> list[Any]:
    """Rows in one order, NULLs (None) first."""
    return sorted(rows, key=lambda row: tuple(-1 if v is None else v for v in row))


def test_joins_as_of_a_time_before_every_row_was_deleted() -> None:
    clock = [T0]
    store = oms.GrainStore(clock=lambda: clock[0], forward_only=True)
    t1, t2 = Table(store, "t1", ("x", "y")), Table(store, "t2", ("x", "y"))
    for row in T1_ROWS:
        t1.insert(row, T0)
    for row in T2_ROWS:
        t2.insert(row, T0)
    at_t0 = T0 + SECOND
    clock[0] = T0 + 2 * SECOND
    t1.delete(lambda x, y: True, clock[0])
    t2.delete(lambda x, y: True, clock[0])
    assert joined(store, "?a ?p ?o .", "", clock[0]) == []  # both tables empty now
    first = f"?r1 <{EX}t1/x> ?x1 ; <{EX}t1/y> ?y1 ."
    second = f"?r2 <{EX}t2/x> ?x2 ; <{EX}t2/y> ?y2 ."
    on = "FILTER (?x1 = ?x2)"
    assert joined(store, first, f"{second} {on}", at_t0) == ordered(INNER)
    assert joined(store, first, f"OPTIONAL {{ {second} {on} }}", at_t0) == ordered(LEFT)
    assert joined(store, second, f"OPTIONAL {{ {first} {on} }}", at_t0) == ordered(
        RIGHT
    )
