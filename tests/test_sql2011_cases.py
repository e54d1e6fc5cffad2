"""SQL:2011 application-time periods: cases from MariaDB's test suite, answered by
the store through the API and through SPARQL.

The inputs and expected rows are the facts of MariaDB's
``mysql-test/suite/period/r/delete.result`` and ``.../period/r/update.result``
(an independent implementation of ``FOR PORTION OF``): a table ``t(id, s, e,
period for apptime(s, e))`` of seven rows, then ``DELETE FROM t FOR PORTION OF
apptime FROM '2000-01-01' TO '2018-01-01'`` or ``UPDATE t FOR PORTION OF apptime
FROM '2000-01-01' TO '2018-01-01' SET id = id + 6``. Each row is a belief (``row
N has id X``) valid over ``[s, e)``; a DELETE is ``retract`` over the portion, an
UPDATE is ``supersede`` over it. The table after the statement is the set of
(id, s, e) of the current beliefs; through SPARQL, the rows valid at a day are
the beliefs in force then.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

import oms_rdf as oms

# period/r/delete.result and period/r/update.result: the table before the statement
ROWS = [
    (1, "1999-01-01", "2018-12-12"),
    (1, "1999-01-01", "2017-01-01"),
    (1, "2017-01-01", "2019-01-01"),
    (2, "1998-01-01", "2018-12-12"),
    (3, "1997-01-01", "2015-01-01"),
    (4, "2016-01-01", "2020-01-01"),
    (5, "2010-01-01", "2015-01-01"),
]
PORTION = ("2000-01-01", "2018-01-01")

# period/r/delete.result: "select * from t" after the DELETE FOR PORTION OF
AFTER_DELETE = [
    (1, "1999-01-01", "2000-01-01"),
    (1, "1999-01-01", "2000-01-01"),
    (1, "2018-01-01", "2018-12-12"),
    (1, "2018-01-01", "2019-01-01"),
    (2, "1998-01-01", "2000-01-01"),
    (2, "2018-01-01", "2018-12-12"),
    (3, "1997-01-01", "2000-01-01"),
    (4, "2018-01-01", "2020-01-01"),
]

# period/r/update.result: "select * from t" after the UPDATE ... SET id=id + 6
AFTER_UPDATE = [
    (1, "1999-01-01", "2000-01-01"),
    (1, "1999-01-01", "2000-01-01"),
    (1, "2018-01-01", "2018-12-12"),
    (1, "2018-01-01", "2019-01-01"),
    (10, "2016-01-01", "2018-01-01"),
    (11, "2010-01-01", "2015-01-01"),
    (2, "1998-01-01", "2000-01-01"),
    (2, "2018-01-01", "2018-12-12"),
    (3, "1997-01-01", "2000-01-01"),
    (4, "2018-01-01", "2020-01-01"),
    (7, "2000-01-01", "2017-01-01"),
    (7, "2000-01-01", "2018-01-01"),
    (7, "2017-01-01", "2018-01-01"),
    (8, "2000-01-01", "2018-01-01"),
    (9, "2000-01-01", "2015-01-01"),
]

NOW = 1_800_000_000_000  # 2027: the statements run after every period began
EX = "http://example.org/"


def ms(day: str) -> int:
    return int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() * 1000)


def day_of(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, UTC).date().isoformat()


def row_belief(n: int, ident: int, s: str, e: str, at: int) -> dict[str, Any]:
    return {"type": "belief", "subject": f"{EX}row{n}", "relation": f"{EX}id",
            "object": str(ident), "confidence": 1.0, "created_at": at,
            "valid_from": ms(s), "valid_to": ms(e)}  # fmt: skip


@pytest.fixture
def table() -> tuple[oms.GrainStore, list[str]]:
    store = oms.GrainStore(clock=lambda: NOW + 10, forward_only=True)
    held = [store.put(row_belief(n, *row, NOW)) for n, row in enumerate(ROWS)]
    return store, held


def rows(store: oms.GrainStore) -> list[tuple[int, str, str]]:
    """The table: (id, s, e) of every current belief, as MariaDB orders it."""
    out = [
        (int(g["object"]), day_of(g["valid_from"]), day_of(g["valid_to"]))
        for g in store.beliefs_by_status("active")
    ]
    return sorted(out, key=lambda r: (str(r[0]), r[1], r[2]))


def sparql_ids_at(store: oms.GrainStore, day: str) -> list[int]:
    answer = store.query(
        f"SELECT ?o WHERE {{ ?row <{EX}id> ?o }}", valid_at=ms(day), as_of=NOW + 10
    )
    return sorted(int(str(r[0].value)) for r in answer)


def oracle_ids_at(table: list[tuple[int, str, str]], day: str) -> list[int]:
    return sorted(i for i, s, e in table if s <= day < e)


def days() -> list[str]:
    """Every boundary of the case and the day before each: where answers change."""
    edges = {d for _i, s, e in ROWS + AFTER_UPDATE for d in (s, e)} | set(PORTION)
    before = {(date.fromisoformat(d) - timedelta(days=1)).isoformat() for d in edges}
    return sorted(edges | before)


def test_delete_for_portion_of(table: tuple[oms.GrainStore, list[str]]) -> None:
    store, held = table
    with store.transaction() as tx:  # one statement: one atomic write
        for address in held:
            tx.retract(address, reason="delete for portion of apptime",
                       valid_from=ms(PORTION[0]), valid_to=ms(PORTION[1]))  # fmt: skip
    assert rows(store) == sorted(AFTER_DELETE, key=lambda r: (str(r[0]), r[1], r[2]))
    for day in days():
        assert sparql_ids_at(store, day) == oracle_ids_at(AFTER_DELETE, day), day
    # before the statement, as of then, the table was the one inserted
    for day in days():
        before = store.query(
            f"SELECT ?o WHERE {{ ?row <{EX}id> ?o }}", valid_at=ms(day), as_of=NOW
        )
        assert sorted(int(str(r[0].value)) for r in before) == oracle_ids_at(ROWS, day)


def test_update_for_portion_of(table: tuple[oms.GrainStore, list[str]]) -> None:
    store, held = table
    with store.transaction() as tx:
        for n, (address, (ident, _s, _e)) in enumerate(zip(held, ROWS, strict=True)):
            new = row_belief(n, ident + 6, *PORTION, NOW + 10)
            del new["valid_from"], new["valid_to"]  # the portion within the row's
            tx.supersede(address, new,
                         valid_from=ms(PORTION[0]), valid_to=ms(PORTION[1]))  # fmt: skip
    assert rows(store) == sorted(AFTER_UPDATE, key=lambda r: (str(r[0]), r[1], r[2]))
    for day in days():
        assert sparql_ids_at(store, day) == oracle_ids_at(AFTER_UPDATE, day), day


def test_a_portion_outside_every_row_changes_nothing(
    table: tuple[oms.GrainStore, list[str]],
) -> None:
    # period/r/delete.result: a row the portion misses is untouched; here the
    # store refuses a portion that misses the belief (ERR_RANGE), writing nothing
    store, held = table
    before = rows(store)
    with pytest.raises(oms.TimeRangeError):
        store.retract(held[6], reason="x", valid_from=ms("2016-01-01"),
                      valid_to=ms("2017-01-01"))  # fmt: skip
    assert rows(store) == before
