"""The SPARQL 1.1 Protocol at ``/sparql`` and the Graph Store Protocol (read-only)
at ``/store``, over the dataset ``GrainStore.query`` uses.

Queries come by GET, POST form or POST ``application/sparql-query``, with
``default-graph-uri``/``named-graph-uri`` and the extension parameters ``valid_at``
and ``as_of`` for time travel; they run on the query lane within the time limit
(:func:`run_query` is the one place a query is evaluated). SPARQL Update comes by
POST only, never with a query (SPARQL 1.1 Protocol §2.1, §2.2), and runs on the
store-call lane as belief operations (:mod:`oms_rdf.io.update`).
"""

from __future__ import annotations

import json
import queue
from collections.abc import Callable

import pyoxigraph as ox
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import ErrorCode, OmsError, QueryError
from ..io.update import update
from ..rdf.limits import check_query
from ..rdf.terms import is_absolute_iri
from ..store import GrainStore
from .auth import OPEN, Authorize, Token
from .bodies import (
    TIME_PARAMETERS,
    body_text,
    form_params,
    given_once,
    param_millis,
    param_span,
)
from .description import description_work, endpoint_iri, with_base
from .federation import is_federated
from .isolation import isolated_answer, isolation_for
from .lanes import Job, Lane, wait_on
from .responses import busy, error_response, not_acceptable, refusal
from .results import (
    RDF_FORMATS,
    RESULT_TYPES,
    QueryRequest,
    negotiate,
    run_query,
)

__all__ = ["QueryRequest", "SparqlProtocol", "run_query"]

Params = dict[str, list[str]]  # a request's parameters, each name's values in order

_FORM = "application/x-www-form-urlencoded"
_RDFLIB_DEFAULT = "urn:x-rdflib:default"  # rdflib's name of the default graph


class SparqlProtocol:
    """The routes of the SPARQL and Graph Store protocols over one store.

    Queries run on ``queries`` within ``query_timeout`` seconds; updates on
    ``calls``, without a time limit, so that a write is never left running behind
    an error (it answers when it has committed or failed).
    """

    def __init__(
        self,
        store: GrainStore,
        authorize: Authorize,
        *,
        queries: Lane,
        calls: Lane,
        query_timeout: float,
    ) -> None:
        self.store, self.authorize = store, authorize
        self.queries, self.calls = queries, calls
        self.query_timeout = query_timeout
        # A query that could run past its limit runs in a process killed there.
        self.isolated = isolation_for(store, workers=queries.workers)

    def routes(self) -> list[Route]:
        """Return ``/sparql`` and ``/store``."""
        return [
            Route("/sparql", self.sparql, methods=["GET", "POST"]),
            Route("/store", self.graph_store, methods=["GET", "HEAD"]),
        ]

    async def sparql(self, request: Request) -> Response:
        """Answer a query, or apply an update (SPARQL 1.1 Protocol)."""
        token = self.authorize(request)
        if isinstance(token, Response):
            return token
        try:
            params = await request_params(request)
        except UnsupportedMediaError as exc:
            return error_response(415, exc.code, exc.message, exc.path)
        except OmsError as exc:
            return refusal(exc)
        if "update" in params:
            if request.method != "POST" or "query" in params:
                return error_response(
                    400,
                    ErrorCode.QUERY,
                    "SPARQL Update comes only by POST, and never with a query "
                    "(SPARQL 1.1 Protocol §2.2)",
                )
            return await self.update(token, params, endpoint_iri(request))
        if request.method in ("GET", "HEAD") and not params.keys() & {
            "query",
            "update",
        }:
            work = description_work(self.store, request, params, token)
            if isinstance(work, Response):
                return work
            return await _answered(self.queries, work, self.query_timeout)
        try:
            asked = _query_request(request, params, token, self.query_timeout)
            asked = with_base(asked, endpoint_iri(request))
        except OmsError as exc:
            return refusal(exc)
        return await _answered(
            self.queries,
            lambda job: isolated_answer(
                self.isolated,
                asked,
                job,
                lambda: run_query(self.store, asked, job.check),
            ),
            self.query_timeout,
        )

    async def graph_store(self, request: Request) -> Response:
        """Answer ``?default`` or ``?graph=IRI``: the knowledge at a point."""
        token = self.authorize(request)
        if isinstance(token, Response):
            return token
        params = {k: request.query_params.getlist(k) for k in request.query_params}
        if ("graph" in params) == ("default" in params):
            return error_response(
                400, ErrorCode.QUERY, "give either ?default or ?graph=IRI"
            )
        media = negotiate(request.headers.get("accept", "*/*"), RESULT_TYPES["graph"])
        if media is None:
            return _not_acceptable(RESULT_TYPES["graph"])
        try:
            valid_at, as_of = time_point(params)
            name = params["graph"][0] if "graph" in params else None
            where = (
                "{ ?s ?p ?o }" if name is None else f"GRAPH {_iri(name)} {{ ?s ?p ?o }}"
            )
        except OmsError as exc:
            return refusal(exc)
        # The knowledge of the point as a query: no copy of it is made here, and
        # the dump runs in a process killed at the time limit.
        asked = QueryRequest(
            text=f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ {where} }}",
            accept=media,
            valid_at=valid_at,
            as_of=as_of,
            namespaces=token.namespaces,
            timeout=self.query_timeout,
        )

        def answer(job: Job) -> tuple[bytes, str]:
            body, answered = isolated_answer(
                self.isolated,
                asked,
                job,
                lambda: run_query(self.store, asked, job.check),
                whole=True,
            )
            if name is not None and not _holds_triples(body, answered):
                raise LookupError(f"no graph {name} holds knowledge at that point")
            return body, answered

        return await _answered(self.queries, answer, self.query_timeout)

    async def update(self, token: Token, params: Params, base: str) -> Response:
        """Apply SPARQL Update as belief operations, in the token's namespace,
        its relative IRIs resolved against ``base`` (the endpoint's IRI), as a
        query's are."""
        if not token.write:
            why = (
                "this token may only read"
                if token is not OPEN
                else "this server holds no write tokens (start it with --token-file)"
            )
            return error_response(403, ErrorCode.INVALIDATION_DENIED, why)
        texts = params["update"]
        try:  # which of two values counts is nowhere written down
            given_once(params, (*TIME_PARAMETERS, "namespace"))
            _update_times(params)
        except OmsError as exc:
            return refusal(exc)
        namespace = _update_namespace(token, params.get("namespace", [None])[0])
        if isinstance(namespace, Response):
            return namespace
        if len(texts) != 1:
            return error_response(400, ErrorCode.QUERY, "give exactly one update")
        try:
            check_query(texts[0], update=True)
        except QueryError as exc:
            return refusal(exc)

        def apply(job: Job) -> tuple[bytes, str]:
            # rdflib's SPARQLUpdateStore writes a Graph's triples into GRAPH
            # <its identifier>: the dataset's default graph's means that graph.
            report = update(
                self.store,
                texts[0],
                namespace=namespace,
                valid_from=params.get("valid_from", [None])[0],
                valid_to=params.get("valid_to", [None])[0],
                base_iri=base if is_absolute_iri(base) else None,
                default_alias=_RDFLIB_DEFAULT,
            )
            body = {
                "added": report.added,
                "believed": report.believed,
                "retracted": report.retracted,
                "not_believed": report.not_believed,
                "superseded": report.superseded,
            }
            return json.dumps(body).encode(), "application/json"

        return await _answered(self.calls, apply, None)


async def request_params(request: Request) -> Params:
    """Return the protocol's parameters, from the URL and a POST's body.

    Raises:
        DecodeError: ERR_CORRUPT for a body that is not UTF-8 (or a form whose
            escapes are not).
    """
    # Read here, not by Starlette, which turns escapes that are not UTF-8 into U+FFFD.
    params = form_params(
        request.scope.get("query_string", b"").decode("latin-1"), "URL"
    )
    if request.method == "POST":
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == _FORM:  # parsed here: no multipart library for a form
            form = form_params(body_text(await request.body()), "form")
            for key, values in form.items():
                params.setdefault(key, []).extend(values)
        elif kind in ("application/sparql-query", "application/sparql-update"):
            key = "query" if kind.endswith("query") else "update"
            params.setdefault(key, []).append(body_text(await request.body()))
        elif kind or await request.body():
            raise UnsupportedMediaError(
                f"a POST to /sparql is {_FORM}, application/sparql-query or "
                f"application/sparql-update; found {kind or 'no content type'}",
                path="Content-Type",
            )
    return params


class UnsupportedMediaError(QueryError):
    """A POST body of a type the protocol does not take: HTTP's 415."""


def time_point(params: Params) -> tuple[int | None, int | None]:
    """Return the bi-temporal point asked for (``valid_at``, ``as_of``), in epoch ms.

    Raises:
        SchemaError: ERR_SCHEMA (or ERR_RANGE) for a time that is not one, or
            one given twice.
    """
    given_once(params)
    valid = (
        param_millis(params["valid_at"][0], "valid_at")
        if "valid_at" in params
        else None
    )
    known = param_millis(params["as_of"][0], "as_of") if "as_of" in params else None
    return valid, known


def time_spans(
    params: Params,
) -> tuple[tuple[int | None, int | None] | None, ...]:
    """Return the ranges asked for (``valid_during``, ``system_during``), each
    ``START/END`` (:func:`oms_rdf.times.span_millis`), or None where not given.

    Raises:
        SchemaError: ERR_SCHEMA (or ERR_RANGE) for a range that is not one, or
            one given twice.
    """
    given_once(params)
    return tuple(
        param_span(params[name][0], name) if name in params else None
        for name in ("valid_during", "system_during")
    )


def _query_request(
    request: Request, params: Params, token: Token, timeout: float | None = None
) -> QueryRequest:
    """The query a request asks, checked before any parser sees it.

    Raises:
        QueryError: ERR_QUERY for SERVICE, no or several queries, or text over
            the limits of :func:`oms_rdf.rdf.limits.check_query`.
        SchemaError: ERR_SCHEMA for a time that is not one.
    """
    texts = params.get("query", [])
    if any(is_federated(text) for text in texts):
        raise QueryError(
            "SERVICE is refused: this endpoint does not send requests elsewhere"
        )
    if len(texts) != 1:
        raise QueryError(
            "give exactly one query (parameter `query`, or a body of type "
            "application/sparql-query)"
        )
    check_query(texts[0])
    valid_at, as_of = time_point(params)
    valid_during, system_during = time_spans(params)
    # rdflib's SPARQLStore names the default graph urn:x-rdflib:default.
    default_uris = [
        u for u in params.get("default-graph-uri", []) if u != _RDFLIB_DEFAULT
    ]
    return QueryRequest(
        text=texts[0],
        accept=request.headers.get("accept", "*/*"),
        valid_at=valid_at,
        as_of=as_of,
        valid_during=valid_during,
        system_during=system_during,
        namespaces=token.namespaces,
        default_graph_uris=default_uris or None,
        named_graph_uris=params.get("named-graph-uri") or None,
        timeout=timeout,
    )


def _update_times(params: Params) -> None:
    """Refuse a question's times on an update, and a portion that is no time.

    Raises:
        QueryError: ERR_QUERY for ``valid_at``, ``as_of``, ``valid_during`` or
            ``system_during``: an update is about the portion ``valid_from`` to
            ``valid_to``, and would silently ignore them.
        SchemaError: as :func:`param_millis`, naming the parameter.
    """
    for name in ("valid_at", "as_of", "valid_during", "system_during"):
        if name in params:
            raise QueryError(
                f"{name} asks a question of a time; an update changes the portion "
                "of valid time given by valid_from and valid_to",
                path=name,
            )
    for name in ("valid_from", "valid_to"):
        if name in params:
            param_millis(params[name][0], name)


def _update_namespace(token: Token, asked: str | None) -> str | Response | None:
    """The namespace an update writes: the one asked, else the token's only one;
    a 403 outside the token's namespaces."""
    scope = token.namespaces
    if scope is None:
        return asked
    if asked is None and len(scope) == 1:
        return scope[0]
    if asked is None:  # the shared namespace: not this token's
        return error_response(
            403,
            ErrorCode.INVALIDATION_DENIED,
            f"without ?namespace= an update writes the shared namespace, outside "
            f"this token; name one of {list(scope)}",
            path="namespace",
        )
    if asked not in scope:
        return error_response(
            403,
            ErrorCode.INVALIDATION_DENIED,
            f"this token may not write namespace {asked!r}; its namespaces are "
            f"{list(scope)}",
            path="namespace",
        )
    return asked


async def _answered(
    lane: Lane,
    answer: Callable[[Job], tuple[bytes, str]],
    timeout: float | None,
) -> Response:
    """Run ``answer`` on ``lane`` within ``timeout`` seconds (None: no limit);
    map its errors to statuses."""
    try:
        body, media = await wait_on(lane, answer, timeout)
    except TimeoutError:
        return error_response(
            503,
            ErrorCode.QUERY,
            f"the query ran over the server's limit of {timeout or 0:g} s and was "
            "cancelled",
            headers={"retry-after": "1"},
        )
    except queue.Full:
        return busy(headers={"retry-after": "1"})
    except LookupError as exc:
        return error_response(404, ErrorCode.NOT_FOUND, str(exc))
    except RecursionError:
        return error_response(400, ErrorCode.QUERY, "the request nests too deeply")
    except OmsError as exc:
        if exc.code == ErrorCode.CONFLICT:  # an import runs: try again after it
            return error_response(
                503, exc.code, exc.message, exc.path, headers={"retry-after": "5"}
            )
        return refusal(exc)
    # The answer's type was chosen by the request's Accept (RFC 9110 §12.5.5).
    return Response(body, media_type=media, headers={"vary": "Accept"})


def _iri(text: str) -> ox.NamedNode:
    try:
        return ox.NamedNode(text)
    except ValueError:
        raise QueryError(f"{text!r} is not an IRI") from None


def _holds_triples(body: bytes, media: str) -> bool:
    """Whether a graph's serialisation holds a triple (a Turtle or JSON-LD one of
    none still has its prefixes or brackets)."""
    return bool(next(iter(ox.parse(body, format=RDF_FORMATS[media])), None))


def _not_acceptable(offered: tuple[str, ...]) -> Response:
    return not_acceptable(f"not acceptable; this answer comes as {', '.join(offered)}")
