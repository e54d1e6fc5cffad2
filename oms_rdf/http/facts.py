"""The facts API under ``/v1``: beliefs over REST, in the shape of XTrace's facts API
with Mneva's evidence and revise.

``{id}`` is a content address, or a unique prefix of at least 8 hex characters. A
fact is JSON (:func:`oms_rdf.http.render.fact_json`): ``id``, ``fields`` (full
names; bytes as ``{"$base64": ...}``), ``status``, ``verification``,
``superseded_by``, ``split_into``, ``effective_confidence`` and ISO times. Grains
also go in and out as raw blobs (``application/vnd.oms.grain``). Errors are JSON ``{"code",
"message", "path"}``: 404 not found, 409 conflict or policy refusal, 422 a grain,
body or argument the schema refuses (a body that is not UTF-8, or nests too
deeply, is ERR_CORRUPT), 403 a token that may not (a write whose grain is in a
namespace outside the token is always a 403). The API is described at
``/openapi.json`` and ``/docs`` (:mod:`oms_rdf.http.openapi`).

A token sees only the facts of its namespaces: another namespace's fact is a 404,
as if it did not exist.
"""

from __future__ import annotations

import json
import queue
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..codec.grain import Grain, namespace_of
from ..errors import (
    ErrorCode,
    NotFoundError,
    OmsError,
    PolicyError,
    SchemaError,
    StoreError,
)
from ..rdf.mapping import TIME_FIELDS
from ..store import GrainStore
from ..times import iso_fields
from .auth import Authorize, Token
from .bodies import (
    GRAIN_TYPE,
    check_url_query,
    finite_number,
    given_once,
    grain_body,
    json_body,
    param_millis,
    whole_number,
)
from .lanes import Runner
from .listing import Listing, Listings
from .openapi import openapi_routes
from .render import erasure_json, evidence_json, fact_json
from .responses import busy, error_response
from .results import negotiate
from .scope import scoped_grain

__all__ = ["PAGE", "FactsApi", "fact_routes"]

PAGE = 100  # facts per page when no limit is given
T = TypeVar("T")
Handler = Callable[["FactsApi", Request, bytes], Response]


async def _threadpool(work: Callable[[], T]) -> T:
    return await run_in_threadpool(work)


def fact_routes(
    store: GrainStore, authorize: Authorize, *, run: Runner = _threadpool
) -> list[Route]:
    """Return the ``/v1`` routes over ``store`` (and their description);
    ``authorize`` maps a request to a token.

    Every handler's store calls go through ``run`` (by default Starlette's thread
    pool): never on the event loop, which a long call would stall for every client.
    """
    return [*FactsApi(store, authorize, run).routes(), *openapi_routes()]


class _FactId(Convertor[str]):
    """A fact's address (or a prefix of it) in a path: any segment but
    ``search``, a route of its own (so ``PUT /v1/facts/search`` is a 405)."""

    regex = "(?!search$)[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("fact", _FactId())


class Refused(Exception):  # noqa: N818 - an answer to give, not an error
    """A request the token may not make: carries the response to give."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response

    def within(self, where: str, what: str) -> Refused:
        """The same refusal of a part of a request (``where``, a JSON path; the
        message begins with ``what``), as a batch names its operations."""
        said = json.loads(bytes(self.response.body))
        path = said.get("path") or ""
        path = where + (path[1:] if path.startswith("$") else "")
        message = f"{what}: {said['message']}"
        status = self.response.status_code
        return Refused(error_response(status, said["code"], message, path))


def _denied(message: str, path: str | None = None) -> Refused:
    return Refused(error_response(403, ErrorCode.INVALIDATION_DENIED, message, path))


class FactsApi:
    """The handlers of the facts API over one store.

    Each handler takes the request and its body and runs on ``run``'s thread;
    :meth:`guarded` answers its refusals and errors.
    """

    def __init__(self, store: GrainStore, authorize: Authorize, run: Runner) -> None:
        self.store, self.authorize, self.run = store, authorize, run
        self.listings = Listings(store)

    def routes(self) -> list[Route]:
        """Return the ``/v1`` routes."""
        table: list[tuple[str, str, Handler]] = [
            ("/v1/facts", "POST", FactsApi.create),
            ("/v1/facts", "GET", FactsApi.listing),
            ("/v1/facts/search", "GET", FactsApi.search),
            ("/v1/facts/{id:fact}", "GET", FactsApi.one),
            ("/v1/facts/{id:fact}", "PUT", FactsApi.supersede),
            ("/v1/facts/{id:fact}", "DELETE", FactsApi.retract),
            ("/v1/facts/{id}/ancestors", "GET", FactsApi.ancestors),
            ("/v1/facts/{id}/evidence", "POST", FactsApi.evidence),
            ("/v1/facts/{id}/revise", "POST", FactsApi.revise),
            ("/v1/facts/{id}/erase", "POST", FactsApi.erase),
            ("/v1/erasures", "POST", FactsApi.erase_subject),
        ]
        # One route a path, so that a 405 lists every method the path takes.
        by_path: dict[str, dict[str, Handler]] = {}
        for path, method, handler in table:
            by_path.setdefault(path, {})[method] = handler
        return [
            Route(path, self._by_method(handlers), methods=list(handlers))
            for path, handlers in by_path.items()
        ]

    def _by_method(
        self, handlers: dict[str, Handler]
    ) -> Callable[[Request], Awaitable[Response]]:
        """One endpoint answering each method by its handler (HEAD as GET)."""
        endpoints = {m: self.guarded(h) for m, h in handlers.items()}

        async def endpoint(request: Request) -> Response:
            method = "GET" if request.method == "HEAD" else request.method
            return await endpoints[method](request)

        return endpoint

    def guarded(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """Return ``handler`` as an endpoint: the token checked before the body is
        read, the work run off the event loop, every refusal a JSON error."""

        def answer(request: Request, raw: bytes) -> Response:
            try:
                # No parameter of this API takes several values: a repeated one
                # is refused, not read as its first or last.
                check_url_query(request.scope.get("query_string", b""))
                q = request.query_params
                given = {name: q.getlist(name) for name in q.keys()}
                given_once(given, names=given)
                return handler(self, request, raw)
            except Refused as refused:
                return refused.response
            except OmsError as exc:
                return error_response(_status(exc), exc.code, exc.message, exc.path)
            except RecursionError:
                return error_response(
                    422, ErrorCode.CORRUPT, "the body nests too deeply", "$"
                )

        async def respond(request: Request) -> Response:
            token = self.authorize(request)  # refused before the body is read
            if isinstance(token, Response):
                return token
            raw = await request.body()
            try:
                response: Response = await self.run(lambda: answer(request, raw))
            except queue.Full:  # nothing was started
                return busy()
            return response

        return respond

    # --- the request's token -------------------------------------------------------

    def scope(
        self, request: Request, *, write: bool = False, erase: bool = False
    ) -> Token:
        """Return the request's token; a refusal is raised, and answered by
        :meth:`guarded`."""
        token = self.authorize(request)
        if isinstance(token, Response):
            raise Refused(token)
        if write and not token.write:
            raise _denied("this token may not write")
        if erase and not token.erase:
            raise _denied("erasure needs a token with the erase scope")
        return token

    def writable(self, token: Token, item: Any) -> tuple[Any, Grain]:
        """Return ``item`` as a grain takes it (see :meth:`prepared`), and the grain
        it makes; refused (403) outside the token's namespaces, whatever else is
        wrong with it: one cause, one status."""
        if isinstance(item, dict) and isinstance(namespace_of(item), str):
            _check_writes(token, namespace_of(item))  # before any other check
        item = self.prepared(item)
        grain: Grain = self.store.accept(item)[0]
        _check_writes(token, grain.namespace)
        return item, grain

    def prepared(self, item: Any) -> Any:
        """Return JSON fields as a grain takes them: ISO 8601 text in a time field
        read as epoch ms (JSON has no datetime), ``created_at`` now by the store's
        clock when not given (the caller holds the store's writes, so no write
        commits a later time first). A blob is as it is."""
        if not isinstance(item, dict):
            return item
        fields = iso_fields(item, TIME_FIELDS)
        fields.setdefault("created_at", self.store.clock())
        return fields

    def fact(self, token: Token, ref: str) -> Grain:
        """Return the stored grain ``ref`` names; one outside the token is not found.

        Raises:
            NotFoundError: ERR_NOT_FOUND.
        """
        return scoped_grain(self.store, ref, token.covers)

    # --- the handlers -------------------------------------------------------------

    def create(self, request: Request, raw: bytes) -> Response:
        """``POST /v1/facts``: store a grain."""
        token = self.scope(request, write=True)
        body = grain_body(request.headers.get("content-type", ""), raw)
        with self.store.writes_held():  # stamped now, written before any later write
            item, grain = self.writable(token, body)
            self.store.put(item)
        return JSONResponse(fact_json(self.store, grain, token.covers), status_code=201)

    def listing(self, request: Request, raw: bytes) -> Response:
        """``GET /v1/facts``: a page of the facts a listing asks, and the next
        page's cursor."""
        token = self.scope(request)
        q = request.query_params
        limit = whole_number(q.get("limit"), PAGE, "limit")
        cursor = q.get("cursor")
        if cursor is None:
            asked = Listing.of(q, self.store.clock(), self.listings.written())
        else:
            asked = Listing.read(cursor).agreeing(q)
        if asked.namespace is not None and not token.covers(asked.namespace):
            return JSONResponse({"facts": [], "next_cursor": None})
        addresses, after = self.listings.page(token, asked, limit)
        page = []
        for address in addresses:
            try:
                page.append(
                    fact_json(self.store, self.store.get(address), token.covers)
                )
            except NotFoundError:  # erased since the listing was read
                continue
        cursor = None if after is None else after.cursor()
        return JSONResponse({"facts": page, "next_cursor": cursor})

    def search(self, request: Request, raw: bytes) -> Response:
        """``GET /v1/facts/search?q=``: ranked recall, of now or of the point
        ``valid_at``/``as_of`` name (as the listing reads them)."""
        token = self.scope(request)
        q = request.query_params
        text = q.get("q")
        if not text:
            raise SchemaError("give the words to look for in ?q=", path="q")
        valid_at, as_of = (
            None if q.get(name) is None else param_millis(q[name], name)
            for name in ("valid_at", "as_of")
        )
        asked = q.get("namespace")
        if asked is not None and not token.covers(asked):
            return JSONResponse({"facts": []})
        namespaces = token.namespaces if asked is None else (asked,)
        limit = whole_number(q.get("limit"), 10)
        hits = self.store.search(
            text, namespace=namespaces, limit=limit, valid_at=valid_at, as_of=as_of
        )
        return JSONResponse(
            {"facts": [fact_json(self.store, g, token.covers) for g in hits]}
        )

    def one(self, request: Request, raw: bytes) -> Response:
        """``GET /v1/facts/{id}``: one fact, as JSON or as its blob."""
        token = self.scope(request)
        grain = self.fact(token, request.path_params["id"])
        # JSON unless the blob is preferred (an Accept no type meets gets JSON too,
        # the default, rather than a 406 a browser would show).
        accept = request.headers.get("accept", "*/*")
        vary = {"Vary": "Accept"}
        if negotiate(accept, ("application/json", GRAIN_TYPE)) == GRAIN_TYPE:
            return Response(grain.blob, media_type=GRAIN_TYPE, headers=vary)
        return JSONResponse(fact_json(self.store, grain, token.covers), headers=vary)

    def supersede(self, request: Request, raw: bytes) -> Response:
        """``PUT /v1/facts/{id}``: replace a fact by a new version; with
        ``?valid_from=`` (and ``valid_to``), for that portion of its valid time only."""
        token = self.scope(request, write=True)
        old = self.fact(token, request.path_params["id"])
        item = grain_body(request.headers.get("content-type", ""), raw)
        body = item if isinstance(item, bytes) else dict(item)
        justification = (
            None if isinstance(body, bytes) else body.pop("$justification", None)
        )
        if not isinstance(justification, str | None):
            raise SchemaError("$justification must be text", path="$justification")
        q = request.query_params
        with self.store.writes_held():  # stamped now, written before any later write
            body, _ = self.writable(token, body)
            new = self.store.supersede(
                old,
                body,
                justification=justification,
                valid_from=q.get("valid_from"),
                valid_to=q.get("valid_to"),
            )
        return JSONResponse(fact_json(self.store, self.store.get(new), token.covers))

    def retract(self, request: Request, raw: bytes) -> Response:
        """``DELETE /v1/facts/{id}?reason=``: withdraw a fact, saying why; with
        ``valid_from`` (and ``valid_to``), that portion of its valid time only."""
        token = self.scope(request, write=True)
        grain = self.fact(token, request.path_params["id"])
        q = request.query_params
        reason = q.get("reason")
        if not reason:
            raise SchemaError(
                "say why in ?reason= (a retraction is audited)", path="reason"
            )
        self.store.retract(
            grain,
            reason=reason,
            by=q.get("by"),
            valid_from=q.get("valid_from"),
            valid_to=q.get("valid_to"),
        )
        return JSONResponse(fact_json(self.store, grain, token.covers))

    def erase(self, request: Request, raw: bytes) -> Response:
        """``POST /v1/facts/{id}/erase``: erase a grain from every layer."""
        token = self.scope(request, erase=True)
        grain = self.fact(token, request.path_params["id"])
        body = json_body(raw)
        reason = body.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise SchemaError(
                "say why in the body's reason (erasure is audited)", path="reason"
            )
        by = body.get("by") if isinstance(body.get("by"), str) else None
        report = self.store.erase(grain, reason=reason, by=by)
        answer = erasure_json(report)
        # Grains of other namespaces derived from it are none of this token's.
        answer["derived"] = [
            a for a in report.derived if token.covers(self.store.get(a).namespace)
        ]
        return JSONResponse(answer)

    def erase_subject(self, request: Request, raw: bytes) -> Response:
        """``POST /v1/erasures``: erase every grain naming a person."""
        token = self.scope(request, erase=True)
        body = json_body(raw)
        subject, reason = body.get("subject"), body.get("reason")
        namespace = body.get("namespace")
        if (
            not isinstance(subject, str)
            or not subject
            or not isinstance(reason, str)
            or not reason.strip()
        ):
            raise SchemaError(
                "the body needs subject and reason (text)", path="subject"
            )
        if namespace is not None and not isinstance(namespace, str):
            raise SchemaError("namespace must be text", path="namespace")
        if not token.covers(namespace):
            raise _denied("this token may erase only in its namespaces: name one")
        by = body.get("by") if isinstance(body.get("by"), str) else None
        report = self.store.erase_subject(
            subject, reason=reason, namespace=namespace, by=by
        )
        return JSONResponse(erasure_json(report))

    def ancestors(self, request: Request, raw: bytes) -> Response:
        """``GET /v1/facts/{id}/ancestors``: the versions before a fact."""
        token = self.scope(request)
        grain = self.fact(token, request.path_params["id"])
        facts = [
            fact_json(self.store, g, token.covers)
            for g in self.store.ancestors(grain)
            if token.covers(g.namespace)  # a version in another namespace is not its
        ]
        return JSONResponse({"facts": facts})

    def evidence(self, request: Request, raw: bytes) -> Response:
        """``POST /v1/facts/{id}/evidence``: record evidence for or against a fact."""
        token = self.scope(request, write=True)
        grain = self.fact(token, request.path_params["id"])
        body = json_body(raw)
        kind = body.get("kind", "supporting")
        strength = body.get("strength", 0.8)
        note = body.get("note")
        if (
            not isinstance(kind, str)
            or type(strength) not in (int, float)
            or not isinstance(note, str | None)
        ):
            raise SchemaError(
                'expected {"kind": "supporting"|"refuting", "strength": a number, '
                '"note": text}',
                path="$",
            )
        strength = finite_number(strength, "strength")
        result = self.store.evidence(grain, kind, strength, note)
        return JSONResponse(evidence_json(result))

    def revise(self, request: Request, raw: bytes) -> Response:
        """``POST /v1/facts/{id}/revise``: supersede under the entrenchment tiers."""
        token = self.scope(request, write=True)
        old = self.fact(token, request.path_params["id"])
        body = json_body(raw)
        fields, force = body.get("fields"), body.get("force", False)
        by, justification = body.get("by"), body.get("justification")
        if (
            not isinstance(fields, dict)
            or not isinstance(force, bool)
            or not isinstance(by, str | None)
            or not isinstance(justification, str | None)
        ):
            raise SchemaError(
                'expected {"fields": {...}, "force": bool, "by": DID, '
                '"justification": text}',
                path="$",
            )
        with self.store.writes_held():  # stamped now, written before any later write
            fields, _ = self.writable(token, fields)
            new = self.store.revise(
                old, fields, force=force, by=by, justification=justification
            )
        return JSONResponse(fact_json(self.store, self.store.get(new), token.covers))


def _check_writes(token: Token, namespace: Any) -> None:
    """Refuse (403) a namespace outside the token's."""
    if not token.covers(namespace):
        raise _denied(
            f"this token may not write namespace {namespace!r}; "
            f"its namespaces are {list(token.namespaces or ())}",
            "$.namespace",
        )


def _status(exc: OmsError) -> int:
    """The status of an error of ours: 404, 409 (conflict or policy), 500 (the
    store's), else 422 (the caller's)."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, PolicyError) or exc.code == ErrorCode.CONFLICT:
        return 409
    if isinstance(exc, StoreError) and not isinstance(exc, ValueError):
        return 500
    return 422
