"""What the page at ``/`` draws besides query answers: the store's history, one
subject's versions on both time axes, the changes between two points, the prefixes
to complete, and the page's own script and style.

Every JSON route takes the request's token, as ``/sparql`` does, and sees only its
namespaces; its store calls run off the event loop. Times come as ISO 8601 or epoch
ms and go back as epoch ms (null: open-ended, or still held).

- ``GET /explorer/prefixes``: the prefixes a query may use. The store's own (which
  need no declaration), its base IRI's relation and entity namespaces, and common
  vocabularies (declared by the page when used). The store keeps no record of the
  ``@prefix`` lines of the sources it adopted, so they are not among them.
- ``GET /explorer/history?bins=N``: when beliefs entered and left the knowledge on
  each axis (system time: when the store held them; valid time: when they were
  true), counted in ``N`` bins over the span of the history, with the audit log's
  imports, transactions and updates as marks.
- ``GET /explorer/subject?subject=S[&relation=R]``: every version of each relation
  of ``S``, as regions of valid time against system time (the notebook's timeline).
- ``GET /explorer/changes?since=T1&until=T2&axis=both``: :meth:`GrainStore.changes`.
- ``GET /explorer/static/{name}``: ``explorer.js`` and ``explorer.css``.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..codec.grain import Grain, system_from
from ..errors import ErrorCode, OmsError, SchemaError
from ..store import COMMON_PREFIXES, PREFIXES, GrainStore, Solutions
from ..store.lookup import kept_past_until
from ..times import to_millis
from .auth import Authorize, Token
from .bodies import TIME_PARAMETERS, given_once
from .lanes import Runner
from .responses import busy, error_response, refusal

__all__ = ["explorer_routes"]

STATIC = {"explorer.js": "text/javascript", "explorer.css": "text/css"}
MAX_BINS = 400
DAY = 86_400_000
MAX_MARKS = 500
MAX_LISTED = 500  # beliefs a side of a delta lists; the counts are whole
MARKED = ("import", "transaction", "put_many", "update", "portion", "erase", "vacuum")
_OMS = PREFIXES["oms"]
# Each count of the history, and the pattern of its time: when grains entered and
# left the store's knowledge (system time), when they became and stopped being true.
_AXES = {
    "entered": "?g oms:systemFrom ?t .",
    "left": "GRAPH oms:index { ?g oms:systemTo ?t }",
    "true_from": "?g oms:validFrom ?t .",
    "true_to": "?g oms:validTo ?t .",
}

Work = Callable[[Token, Request], Any]


def explorer_routes(
    store: GrainStore, authorize: Authorize, *, run: Runner
) -> list[Route]:
    """Return the routes of the explorer's data and assets (see the module)."""
    data = ExplorerData(store)
    table: list[tuple[str, Work]] = [
        ("/explorer/prefixes", data.prefixes),
        ("/explorer/history", data.history),
        ("/explorer/subject", data.subject),
        ("/explorer/changes", data.changes),
    ]
    routes = [
        Route(path, _guarded(work, authorize, run), methods=["GET"])
        for path, work in table
    ]
    routes.append(Route("/explorer/static/{name}", _static, methods=["GET"]))
    return routes


def _guarded(work: Work, authorize: Authorize, run: Runner) -> Any:
    """``work`` as an endpoint: the token checked, run off the event loop, its
    answer JSON and every refusal a JSON error."""

    def answer(token: Token, request: Request) -> Response:
        try:
            q = request.query_params
            given_once({name: q.getlist(name) for name in TIME_PARAMETERS})
            return JSONResponse(work(token, request))
        except OmsError as exc:
            return refusal(exc)

    async def respond(request: Request) -> Response:
        token = authorize(request)
        if isinstance(token, Response):
            return token
        try:
            response: Response = await run(lambda: answer(token, request))
        except queue.Full:
            return busy()
        return response

    return respond


async def _static(request: Request) -> Response:
    """The page's script and style, from the package."""
    name = request.path_params["name"]
    if name not in STATIC:
        return error_response(404, ErrorCode.NOT_FOUND, f"no asset {name!r}")
    text = resources.files(__package__).joinpath("static", name).read_text("utf-8")
    return Response(
        text, media_type=STATIC[name], headers={"cache-control": "no-cache"}
    )


def _time(request: Request, name: str, *, required: bool = False) -> int | None:
    """A time parameter as epoch ms; None when absent and not required.

    Raises:
        SchemaError: ERR_SCHEMA for a missing required time or one not ISO 8601
            or epoch ms.
    """
    value = request.query_params.get(name)
    if value is None:  # given empty, it is refused as everywhere else
        if required:
            raise SchemaError(f"the parameter {name} is needed", path=name)
        return None
    try:
        return to_millis(value, name)
    except SchemaError as exc:  # named, as the other parameters' errors are
        code = exc.code if isinstance(exc.code, ErrorCode) else None
        raise SchemaError(exc.message, code=code, path=name) from None


def _namespaces(token: Token) -> list[str | None]:
    """The namespaces a store call is narrowed to: None is every one."""
    return [None] if token.namespaces is None else list(token.namespaces)


def _select(store: GrainStore, sparql: str) -> Solutions:
    """The solutions of a SELECT over the store as laid out (grains, index, audit)."""
    rows = store.query(sparql, grains=True)
    assert isinstance(rows, Solutions)
    return rows


class ExplorerData:
    """The explorer's answers over one store, each for one request's token."""

    def __init__(self, store: GrainStore) -> None:
        self.store = store

    def prefixes(self, token: Token, request: Request) -> dict[str, Any]:
        """The store's prefixes, its base IRI's, and the common ones."""
        base = self.store.settings.base_iri
        own = {"rel": f"{base}rel/", "entity": f"{base}entity/"}
        if token.namespaces is None:  # adopted sources' names may tell of any namespace
            own = self.store.prefixes() | own
        for namespace in self._visible_namespaces(token):
            if namespace.isidentifier() and namespace not in PREFIXES:
                own.setdefault(namespace, f"{base}entity/{namespace}/")
        return {
            "declared": PREFIXES,  # a query may use these without declaring them
            "store": own,
            "common": COMMON_PREFIXES,
        }

    def _visible_namespaces(self, token: Token) -> list[str]:
        if token.namespaces is not None:
            return list(token.namespaces)
        rows = _select(
            self.store,
            f"SELECT DISTINCT ?ns WHERE {{ ?g <{_OMS}namespace> ?ns }} LIMIT 50",
        )
        return sorted(str(row["ns"].value) for row in rows)

    def history(self, token: Token, request: Request) -> dict[str, Any]:
        """Beliefs entering and leaving on both axes, in bins, and the audit marks."""
        try:
            bins = int(request.query_params.get("bins", "120"))
        except ValueError:
            raise SchemaError("bins is a whole number", path="bins") from None
        if not 1 <= bins <= MAX_BINS:
            raise SchemaError(f"bins is 1 to {MAX_BINS}; found {bins}", path="bins")
        counts = {name: self._counts(token, name) for name in _AXES}
        marks = self._marks(token)
        now = self.store.clock()
        points = [at for found in counts.values() for at in found]
        points += [mark["at"] for mark in marks] + [now]
        low, high = min(points), max(points)
        if high - low < DAY:  # one moment: a day around it
            low, high = low - DAY // 2, high + DAY // 2
        counted = _Bins(low, high, bins)
        for name, found in counts.items():
            for at, count in found.items():
                counted.add(name, at, count)
        return {
            "now": now,
            "low": low,
            "high": high,
            "beliefs": sum(counts["entered"].values()),
            "bins": counted.rows(),
            "marks": marks,
        }

    def _counts(self, token: Token, name: str) -> dict[int, int]:
        """How many grains of the token's view have each value of one time: a
        grouped count, so that Oxigraph reads one pattern and Python few rows."""
        pattern = _AXES[name]
        scope = ""
        if token.namespaces is not None:
            names = " ".join(_literal(n) for n in token.namespaces)
            scope = f"VALUES ?ns {{ {names} }} ?g oms:namespace ?ns ."
        rows = _select(
            self.store,
            f"""PREFIX oms: <{_OMS}>
            SELECT ?t (COUNT(*) AS ?n) WHERE {{ {scope} {pattern} }} GROUP BY ?t""",
        )
        return {to_millis(row["t"].value): int(row["n"].value) for row in rows}

    def _marks(self, token: Token) -> list[dict[str, Any]]:
        """The audit log's imports, transactions and updates, one mark an event; a
        token narrowed to namespaces sees only the events that target one of its
        grains."""
        operations = " ".join(_literal(op) for op in MARKED)
        scope = ""
        if token.namespaces is not None:
            names = " ".join(_literal(n) for n in token.namespaces)
            scope = (
                f"FILTER EXISTS {{ VALUES ?ns {{ {names} }} "
                "GRAPH oms:audit { ?e oms:target ?t } ?t oms:namespace ?ns }"
            )
        rows = _select(
            self.store,
            f"""PREFIX oms: <{_OMS}>
            SELECT ?at ?op ?count WHERE {{ VALUES ?op {{ {operations} }}
              GRAPH oms:audit {{ ?e oms:operation ?op ; oms:at ?at .
                OPTIONAL {{ ?e oms:count ?count }} }}
              {scope} }}
            ORDER BY DESC(?at) LIMIT {MAX_MARKS}""",
        )
        marks = [
            {
                "at": to_millis(row["at"].value),
                "operation": row["op"].value,
                "count": None if row["count"] is None else int(row["count"].value),
            }
            for row in rows
        ]
        return sorted(marks, key=lambda mark: mark["at"])

    def subject(self, token: Token, request: Request) -> dict[str, Any]:
        """Every version of each relation of a subject, as timeline regions."""
        subject = request.query_params.get("subject", "").strip()
        if not subject:
            raise SchemaError("the parameter subject is needed", path="subject")
        relation = request.query_params.get("relation") or None
        found: dict[str, Grain] = {}
        for namespace in _namespaces(token):
            for status in ("active", "superseded", "retracted"):
                for grain in self.store.beliefs_by_status(
                    status, subject, relation, namespace=namespace
                ):
                    found[grain.address] = grain
        relations: dict[str, list[dict[str, Any]]] = {}
        ordered = sorted(found.values(), key=lambda g: (system_from(g), g.address))
        for grain in ordered:
            regions = relations.setdefault(str(grain.get("relation")), [])
            regions.extend(self._regions(grain))
        return {
            "subject": subject,
            "now": self.store.clock(),
            "versions": len(found),
            "relations": [
                {"relation": name, "regions": regions}
                for name, regions in sorted(relations.items())
            ],
        }

    def _regions(self, grain: Grain) -> Iterator[dict[str, Any]]:
        """Where a version stands on both axes, as :meth:`GrainStore.beliefs` reads
        it; after a supersession the old version still describes the past, up to
        its successor's valid time."""
        state = self.store.status(grain)
        known_from = system_from(grain)
        valid_from = grain.get("valid_from", known_from)
        valid_to = grain.get("valid_to")
        kind = state.kind
        region = _belief(grain, state.status)
        yield region | {
            "kind": kind,
            "valid": [valid_from, valid_to],
            "known": [known_from, state.system_to],
        }
        kept = kept_past_until(self.store.backend, grain.address)
        if kept is not None and state.voided_at is None and state.system_to:
            end = kept if valid_to is None else min(valid_to, kept)
            if end > valid_from:
                yield region | {
                    "kind": "past",
                    "valid": [valid_from, end],
                    "known": [state.system_to, None],
                }

    def changes(self, token: Token, request: Request) -> dict[str, Any]:
        """The beliefs that entered and left between two points."""
        since = _time(request, "since", required=True)
        until = _time(request, "until")
        axis = request.query_params.get("axis", "both")
        entered: list[Grain] = []
        left: list[Grain] = []
        for namespace in _namespaces(token):
            delta = self.store.changes(
                since,
                until,
                namespace=namespace,
                axis=axis,  # type: ignore[arg-type]  # checked by changes
            )
            entered.extend(delta.entered)
            left.extend(delta.left)
        return {
            "since": since,
            "until": self.store.clock() if until is None else until,
            "axis": axis,
            "entered": self._listed(entered),
            "left": self._listed(left),
            "counts": {"entered": len(entered), "left": len(left)},
        }

    def _listed(self, grains: Iterable[Grain]) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = []
        for grain in grains:
            if len(listed) == MAX_LISTED:
                break
            listed.append(_belief(grain, self.store.status(grain).status))
        return listed


def _belief(grain: Grain, status: str) -> dict[str, Any]:
    """What the page shows of one belief."""
    return {
        "address": grain.address,
        "subject": _text(grain.get("subject")),
        "relation": _text(grain.get("relation")),
        "object": _text(grain.get("object")),
        "namespace": grain.namespace,
        "status": status,
        "confidence": grain.get("confidence"),
        "valid_from": grain.get("valid_from", system_from(grain)),
        "valid_to": grain.get("valid_to"),
        "system_from": system_from(grain),
    }


def _text(value: Any) -> Any:
    """A field as JSON takes it: text, number or boolean as they are, else text."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _literal(text: str) -> str:
    """``text`` as a SPARQL string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


class _Bins:
    """Counts of times in ``n`` equal bins from ``low`` to ``high``."""

    def __init__(self, low: int, high: int, n: int) -> None:
        self.low, self.width, self.n = low, max(1, -(-(high - low + 1) // n)), n
        self.counts: dict[str, list[int]] = {}

    def add(self, name: str, at: int, count: int = 1) -> None:
        counts = self.counts.setdefault(name, [0] * self.n)
        counts[min(self.n - 1, max(0, (at - self.low) // self.width))] += count

    def rows(self) -> list[dict[str, int]]:
        names = ("entered", "left", "true_from", "true_to")
        rows = []
        for i in range(self.n):
            row = {
                "from": self.low + i * self.width,
                "to": self.low + (i + 1) * self.width,
            }
            for name in names:
                row[name] = self.counts.get(name, [0] * self.n)[i]
            rows.append(row)
        return rows
