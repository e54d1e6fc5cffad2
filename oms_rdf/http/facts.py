"""The facts API under ``/v1``: beliefs over REST, in the shape of XTrace's facts API
with Mneva's evidence and revise.

``{id}`` is a content address, or a unique prefix of at least 8 hex characters. A
fact is JSON: ``id``, ``fields`` (full names; bytes as ``{"$base64": ...}``),
``status``, ``verification``, ``superseded_by``, ``effective_confidence`` and ISO
times. Grains also go in and out as raw blobs (``application/vnd.oms.grain``).
Errors are JSON ``{"code", "message", "path"}``: 404 not found, 409 conflict or
policy refusal, 422 a grain, body or argument the schema refuses (a body that is
not UTF-8, or nests too deeply, is ERR_CORRUPT), 403 a token that may not (a
write whose grain is in a namespace outside the token is always a 403).

A token sees only the facts of its namespaces: another namespace's fact is a 404,
as if it did not exist.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, TypeVar
from xml.sax.saxutils import escape

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ..codec.grain import Grain
from ..errors import (
    DecodeError,
    ErrorCode,
    NotFoundError,
    OmsError,
    PolicyError,
    SchemaError,
    StoreError,
)
from ..io import dumps_jsonl, loads_json_grain
from ..rdf.mapping import TIME_FIELDS
from ..store import GrainStore
from ..times import iso, iso_fields, to_millis
from .lanes import Runner

__all__ = [
    "GRAIN_TYPE",
    "OPENAPI",
    "body_text",
    "error_response",
    "fact_json",
    "fact_routes",
]

GRAIN_TYPE = "application/vnd.oms.grain"
PAGE = 100  # facts per page when no limit is given
LISTINGS_KEPT = 8  # listings whose order is kept for their next pages
Authorize = Callable[[Request], Any]  # -> Token, or a Response refusing
_T = TypeVar("_T")


async def _threadpool(work: Callable[[], _T]) -> _T:
    return await run_in_threadpool(work)


def fact_json(store: GrainStore, grain: Grain) -> dict[str, Any]:
    """Return a fact as JSON: its fields, index state and times."""
    state = store.status(grain.address)
    fields = json.loads(
        dumps_jsonl(grain)
    )  # full names; {"$blob"} when only bytes keep it
    system_from = grain.get("system_valid_from", grain.created_at)
    return {
        "id": grain.address,
        "type": grain.get("type"),
        "fields": fields,
        "namespace": grain.get("namespace", "shared"),
        "status": state.status,
        "verification": state.verification,
        "superseded_by": state.superseded_by,
        "effective_confidence": (
            state.effective_confidence
            if state.effective_confidence is not None
            else grain.get("confidence")
        ),
        "valid_from": _iso(grain.get("valid_from", system_from)),
        "valid_to": _iso(grain.get("valid_to")),
        "system_from": _iso(system_from),
        "system_to": _iso(state.system_to),
    }


def fact_routes(
    store: GrainStore, authorize: Authorize, *, run: Runner = _threadpool
) -> list[Route]:
    """Return the ``/v1`` routes over ``store``; ``authorize`` maps a request to a token.

    Every handler's store calls go through ``run`` (by default Starlette's thread
    pool): never on the event loop, which a long call would stall for every client.
    """

    def scope(request: Request, *, write: bool = False, erase: bool = False) -> Any:
        """The request's token; a refusal is raised, and answered by ``guarded``."""
        token = authorize(request)
        if isinstance(token, Response):
            raise _Refused(token)
        if write and not token.write:
            raise _Refused(
                _error(403, ErrorCode.INVALIDATION_DENIED, "this token may not write")
            )
        if erase and not getattr(token, "erase", False):
            raise _Refused(_error(403, ErrorCode.INVALIDATION_DENIED,
                                  "erasure needs a token with the erase scope"))  # fmt: skip
        return token

    def visible(token: Any, grain: Grain) -> bool:
        return (
            token.namespaces is None
            or grain.get("namespace", "shared") in token.namespaces
        )

    def outside(token: Any, namespace: Any) -> None:
        """Refuse (403) a namespace outside the token's."""
        if token.namespaces is not None and namespace not in token.namespaces:
            raise _Refused(_error(403, ErrorCode.INVALIDATION_DENIED,
                f"this token may not write namespace {namespace!r}; "
                f"its namespaces are {list(token.namespaces)}", "$.namespace"))  # fmt: skip

    def writable(token: Any, item: Any) -> tuple[Any, Grain]:
        """``item`` as a grain takes it (see ``prepared``), and the grain it makes;
        refused (403) outside the token's namespaces, whatever else is wrong with
        it: one cause, one status."""
        if isinstance(item, dict) and isinstance(item.get("namespace", "shared"), str):
            outside(token, item.get("namespace", "shared"))  # before any other check
        item = prepared(item)
        grain: Grain = store.accept(item)[0]
        outside(token, grain.get("namespace", "shared"))
        return item, grain

    def prepared(item: Any) -> Any:
        """JSON fields as a grain takes them: ISO 8601 text in a time field read
        as epoch ms (JSON has no datetime), ``created_at`` now by the store's
        clock when not given. A blob is as it is."""
        if not isinstance(item, dict):
            return item
        fields = iso_fields(item, TIME_FIELDS)
        fields.setdefault("created_at", store.clock())
        return fields

    def fact(token: Any, ref: str) -> Grain:
        grain = store.get(store.resolve(ref))
        if not visible(token, grain):
            raise NotFoundError(f"no grain {ref} in this store")
        return grain

    def create(request: Request, raw: bytes) -> Response:
        token = scope(request, write=True)
        item, grain = writable(token, _grain_body(request, raw))
        store.put(item)
        return JSONResponse(fact_json(store, grain), status_code=201)

    listed: OrderedDict[tuple[Any, ...], list[str]] = OrderedDict()  # by _Listing.key
    listed_lock = threading.Lock()

    def addresses(token: Any, asked: _Listing) -> list[str]:
        """The addresses a listing pages through, in order: read once for its
        pinned point, then kept (a few listings), so a page costs its rows."""
        key = (*asked.key(), _namespace_key(token))
        with listed_lock:
            found = listed.get(key)
            if found is not None:
                listed.move_to_end(key)
                return found
        if asked.status is None:
            grains = store.beliefs(
                asked.subject, asked.relation, namespace=asked.namespace,
                valid_at=asked.valid_at, as_of=asked.as_of,
            )  # fmt: skip
        else:
            grains = store.beliefs_by_status(
                asked.status, asked.subject, asked.relation, namespace=asked.namespace
            )
        found = [g.address for g in grains if visible(token, g)]
        with listed_lock:
            listed[key] = found
            while len(listed) > LISTINGS_KEPT:
                listed.popitem(last=False)
        return found

    def listing(request: Request, raw: bytes) -> Response:
        token = scope(request)
        q = request.query_params
        limit = _int(q.get("limit"), PAGE)
        cursor = q.get("cursor")
        asked = (
            _Listing.of(q, store.clock()) if cursor is None else _Listing.read(cursor)
        )
        if (
            asked.namespace is not None
            and token.namespaces is not None
            and asked.namespace not in token.namespaces
        ):
            return JSONResponse({"facts": [], "next_cursor": None})
        order = addresses(token, asked)
        page = []
        for address in order[asked.offset : asked.offset + limit]:
            try:
                page.append(fact_json(store, store.get(address)))
            except NotFoundError:  # erased since the listing was read
                continue
        more = asked.offset + limit < len(order)
        return JSONResponse({
            "facts": page,
            "next_cursor": asked.at(asked.offset + limit).cursor() if more else None,
        })  # fmt: skip

    def search(request: Request, raw: bytes) -> Response:
        token = scope(request)
        q = request.query_params
        text = q.get("q")
        if not text:
            raise SchemaError("give the words to look for in ?q=", path="q")
        asked = q.get("namespace")
        namespaces = token.namespaces if asked is None else (asked,)
        if (
            asked is not None
            and token.namespaces is not None
            and asked not in token.namespaces
        ):
            return JSONResponse({"facts": []})
        hits = store.search(text, namespace=namespaces, limit=_int(q.get("limit"), 10))
        return JSONResponse({"facts": [fact_json(store, g) for g in hits]})

    def one(request: Request, raw: bytes) -> Response:
        token = scope(request)
        grain = fact(token, request.path_params["id"])
        if GRAIN_TYPE in request.headers.get("accept", ""):
            return Response(grain.blob, media_type=GRAIN_TYPE)
        return JSONResponse(fact_json(store, grain))

    def supersede(request: Request, raw: bytes) -> Response:
        token = scope(request, write=True)
        old = fact(token, request.path_params["id"])
        item = _grain_body(request, raw)
        body = item if isinstance(item, bytes) else dict(item)
        justification = (
            None if isinstance(body, bytes) else body.pop("$justification", None)
        )
        if not isinstance(justification, str | None):
            raise SchemaError("$justification must be text", path="$justification")
        body, _ = writable(token, body)
        new = store.supersede(old, body, justification=justification)
        return JSONResponse(fact_json(store, store.get(new)))

    def retract(request: Request, raw: bytes) -> Response:
        token = scope(request, write=True)
        grain = fact(token, request.path_params["id"])
        reason = request.query_params.get("reason")
        if not reason:
            raise SchemaError(
                "say why in ?reason= (a retraction is audited)", path="reason"
            )
        store.retract(grain, reason=reason, by=request.query_params.get("by"))
        return JSONResponse(fact_json(store, grain))

    def erase(request: Request, raw: bytes) -> Response:
        token = scope(request, erase=True)
        grain = fact(token, request.path_params["id"])
        body = _json_body(raw)
        reason = body.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise SchemaError(
                "say why in the body's reason (erasure is audited)", path="reason"
            )
        by = body.get("by") if isinstance(body.get("by"), str) else None
        return JSONResponse(_erasure_json(store.erase(grain, reason=reason, by=by)))

    def erase_subject(request: Request, raw: bytes) -> Response:
        token = scope(request, erase=True)
        body = _json_body(raw)
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
        if token.namespaces is not None and namespace not in token.namespaces:
            raise _Refused(_error(403, ErrorCode.INVALIDATION_DENIED,
                                  "this token may erase only in its namespaces: name one"))  # fmt: skip
        by = body.get("by") if isinstance(body.get("by"), str) else None
        report = store.erase_subject(subject, reason=reason, namespace=namespace, by=by)
        return JSONResponse(_erasure_json(report))

    def ancestors(request: Request, raw: bytes) -> Response:
        token = scope(request)
        grain = fact(token, request.path_params["id"])
        return JSONResponse(
            {"facts": [fact_json(store, g) for g in store.ancestors(grain)]}
        )

    def evidence(request: Request, raw: bytes) -> Response:
        token = scope(request, write=True)
        grain = fact(token, request.path_params["id"])
        body = _json_body(raw)
        kind, strength, note = (
            body.get("kind", "supporting"),
            body.get("strength", 0.8),
            body.get("note"),
        )
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
        result = store.evidence(grain, kind, _number(strength, "strength"), note)
        return JSONResponse({
            "id": result.address, "status": result.status, "log_ratio": result.log_ratio,
            "effective_confidence": result.effective_confidence, "changed": result.changed,
        })  # fmt: skip

    def revise(request: Request, raw: bytes) -> Response:
        token = scope(request, write=True)
        old = fact(token, request.path_params["id"])
        body = _json_body(raw)
        fields, force = body.get("fields"), body.get("force", False)
        by, justification = body.get("by"), body.get("justification")
        if (
            not isinstance(fields, dict)
            or not isinstance(force, bool)
            or not isinstance(by, str | None)
            or not isinstance(justification, str | None)
        ):
            raise SchemaError(
                'expected {"fields": {...}, "force": bool, "by": DID, "justification": text}',
                path="$",
            )
        fields, _ = writable(token, fields)
        new = store.revise(old, fields, force=force, by=by, justification=justification)
        return JSONResponse(fact_json(store, store.get(new)))

    async def openapi(request: Request) -> Response:
        return JSONResponse(OPENAPI)

    async def docs(request: Request) -> Response:
        rows = "".join(
            f"<tr><td>{method.upper()}</td><td><code>{escape(path)}</code></td>"
            f"<td>{escape(op.get('summary', ''))}{_op_details(op)}</td></tr>"
            for path, item in OPENAPI["paths"].items()
            for method, op in item.items()
            if isinstance(op, dict) and method != "parameters"
        )
        return HTMLResponse(
            "<!doctype html><html lang=en><head><meta charset=utf-8><title>oms-rdf API"
            "</title></head><body><h1>oms-rdf facts API</h1><p>Machine-readable: "
            "<a href=openapi.json>openapi.json</a>. Send <code>Authorization: Bearer "
            "TOKEN</code> when the server has a token file.</p><table>"
            f"<tr><th>method</th><th>path</th><th>what</th></tr>{rows}</table></body></html>"
        )

    def guarded(
        handler: Callable[[Request, bytes], Response],
    ) -> Callable[[Request], Any]:
        def answer(request: Request, raw: bytes) -> Response:
            try:
                return handler(request, raw)
            except _Refused as refusal:
                return refusal.response
            except OmsError as exc:
                return _error(_status(exc), exc.code, exc.message, exc.path)
            except RecursionError:
                return _error(422, ErrorCode.CORRUPT, "the body nests too deeply", "$")

        async def respond(request: Request) -> Response:
            token = authorize(request)  # refused before the body is read
            if isinstance(token, Response):
                return token
            raw = await request.body()
            try:
                response: Response = await run(lambda: answer(request, raw))
            except queue.Full:  # nothing was started
                return _error(503, ErrorCode.STORE, "the server is busy: too many "
                              "requests are waiting; try again")  # fmt: skip
            return response

        return respond

    return [
        Route("/v1/facts", guarded(create), methods=["POST"]),
        Route("/v1/facts", guarded(listing), methods=["GET"]),
        Route("/v1/facts/search", guarded(search), methods=["GET"]),
        Route("/v1/facts/{id}", guarded(one), methods=["GET"]),
        Route("/v1/facts/{id}", guarded(supersede), methods=["PUT"]),
        Route("/v1/facts/{id}", guarded(retract), methods=["DELETE"]),
        Route("/v1/facts/{id}/ancestors", guarded(ancestors), methods=["GET"]),
        Route("/v1/facts/{id}/evidence", guarded(evidence), methods=["POST"]),
        Route("/v1/facts/{id}/revise", guarded(revise), methods=["POST"]),
        Route("/v1/facts/{id}/erase", guarded(erase), methods=["POST"]),
        Route("/v1/erasures", guarded(erase_subject), methods=["POST"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/docs", docs, methods=["GET"]),
    ]


@dataclass(frozen=True)
class _Listing:
    """What a listing asks, its point in time pinned when its first page was
    read, and where a page starts: what an opaque cursor carries. Pinned, every
    page answers the same question (a write after ``as_of`` changes no page)."""

    subject: str | None
    relation: str | None
    namespace: str | None
    status: str | None
    valid_at: int | None
    as_of: int | None
    offset: int = 0

    @classmethod
    def of(cls, q: Mapping[str, str], now: int) -> _Listing:
        status = q.get("status")
        valid_at, as_of = q.get("valid_at"), q.get("as_of")
        pinned = None if status is not None else now  # a status listing has no time
        if status is not None and (valid_at is not None or as_of is not None):
            raise SchemaError(
                "status lists by index status, whatever the times; give it without "
                "valid_at/as_of",
                path="status",
            )
        return cls(
            q.get("subject"), q.get("relation"), q.get("namespace"), status,
            pinned if valid_at is None else to_millis(valid_at, "valid_at"),
            pinned if as_of is None else to_millis(as_of, "as_of"),
        )  # fmt: skip

    @classmethod
    def read(cls, cursor: str) -> _Listing:
        """The listing a cursor carries.

        Raises:
            SchemaError: ERR_SCHEMA for text no page answer gave.
        """
        try:
            fields = json.loads(
                base64.urlsafe_b64decode(cursor.encode("ascii") + b"==")
            )
            listing = cls(**fields)
        except (ValueError, TypeError, UnicodeError, binascii.Error):
            raise SchemaError(
                f"expected a next_cursor a page gave; found {cursor[:40]!r}",
                path="cursor",
            ) from None
        texts = (listing.subject, listing.relation, listing.namespace, listing.status)
        times = (listing.valid_at, listing.as_of)
        if (
            not all(t is None or isinstance(t, str) for t in texts)
            or not all(t is None or type(t) is int for t in times)
            or type(listing.offset) is not int
            or listing.offset < 0
        ):
            raise SchemaError(
                f"expected a next_cursor a page gave; found {cursor[:40]!r}",
                path="cursor",
            )
        return listing

    def key(self) -> tuple[Any, ...]:
        return (self.subject, self.relation, self.namespace, self.status,
                self.valid_at, self.as_of)  # fmt: skip

    def at(self, offset: int) -> _Listing:
        return replace(self, offset=offset)

    def cursor(self) -> str:
        text = json.dumps(asdict(self), separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode("ascii").rstrip("=")


def _namespace_key(token: Any) -> tuple[str, ...] | None:
    return None if token.namespaces is None else tuple(sorted(token.namespaces))


def _resolved(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        found: Mapping[str, Any] = OPENAPI["components"]["schemas"][
            ref.rsplit("/", 1)[1]
        ]
        return found
    return schema


def _fields_html(schema: Mapping[str, Any]) -> str:
    """A schema's fields as a list: name, type, required, description."""
    schema = _resolved(schema)
    required = set(schema.get("required", ()))
    items = []
    for name, field in schema.get("properties", {}).items():
        field = _resolved(field)
        kind = (
            field.get("type")
            or " | ".join(str(o.get("type")) for o in field.get("oneOf", ()))
            or (
                "one of " + ", ".join(map(str, field["enum"]))
                if "enum" in field
                else ""
            )
        )
        if isinstance(kind, list):
            kind = " | ".join(kind)
        items.append(
            f"<li><code>{escape(name)}</code> {escape(str(kind))}"
            + (" <b>required</b>" if name in required else "")
            + (f": {escape(field['description'])}" if "description" in field else "")
            + "</li>"
        )
    return f"<ul>{''.join(items)}</ul>" if items else ""


def _op_details(op: Mapping[str, Any]) -> str:
    """An operation's request fields and example body, and its response's fields."""
    parts = []
    body = op.get("requestBody", {}).get("content", {}).get("application/json")
    if body:
        parts.append(f"<p>Request body:</p>{_fields_html(body['schema'])}")
        if "example" in body:
            parts.append(
                "<p>Example:</p><pre>"
                + escape(json.dumps(body["example"], indent=2))
                + "</pre>"
            )
    ok = next(
        (r for code, r in op.get("responses", {}).items() if code in ("200", "201")),
        None,
    )
    answer = (ok or {}).get("content", {}).get("application/json")
    if answer:
        schema = _resolved(answer["schema"])
        items = schema.get("properties", {}).get("facts", {}).get("items")
        parts.append(f"<p>Response:</p>{_fields_html(items or schema)}")
    return (
        f"<details><summary>fields</summary>{''.join(parts)}</details>" if parts else ""
    )


def _erasure_json(report: Any) -> dict[str, Any]:
    return {"erased": report.erased, "held": report.held, "derived": report.derived,
            "complete": report.complete, "remaining": report.remaining}  # fmt: skip


class _Refused(Exception):  # noqa: N818 - an answer to give, not an error
    """A request the token may not make: carries the response to give."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def _status(exc: OmsError) -> int:
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, PolicyError) or exc.code == ErrorCode.CONFLICT:
        return 409
    if isinstance(exc, StoreError) and not isinstance(exc, ValueError):
        return 500
    return 422


def error_response(
    status: int,
    code: str,
    message: str,
    path: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """Return the JSON error every route answers: ``{"code", "message", "path"}``."""
    return JSONResponse({"code": str(code), "message": message, "path": path},
                        status_code=status, headers=headers)  # fmt: skip


_error = error_response


def body_text(raw: bytes) -> str:
    """A request body as text.

    Raises:
        DecodeError: ERR_CORRUPT when it is not UTF-8, naming the byte.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"the body is not UTF-8: byte {exc.start} is {raw[exc.start]:#04x}",
            path="$",
        ) from None


def _number(value: float, name: str) -> float:
    """A JSON number as a finite float (JSON's integers have no size limit)."""
    try:
        number = float(value)
    except OverflowError:
        raise SchemaError(f"{name}: {str(value)[:20]}… is too large for a float",
                          code=ErrorCode.RANGE, path=f"$.{name}") from None  # fmt: skip
    if not math.isfinite(number):
        raise SchemaError(f"{name} must be finite, found {value}",
                          code=ErrorCode.FLOAT_INVALID, path=f"$.{name}")  # fmt: skip
    return number


def _grain_body(request: Request, raw: bytes) -> bytes | dict[str, Any]:
    """A grain from the request body: a raw blob, or JSON fields as export writes them."""
    if request.headers.get("content-type", "").startswith(GRAIN_TYPE):
        return raw
    item, index = loads_json_grain(body_text(raw))
    if index is not None or not isinstance(item, dict | bytes):
        raise SchemaError("expected one grain as a JSON object of fields", path="$")
    return item


def _json_body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(body_text(raw) or "{}")
    except DecodeError:
        raise
    except ValueError:
        raise SchemaError("the body is not JSON", path="$") from None
    if not isinstance(body, dict):
        raise SchemaError("expected a JSON object", path="$")
    return body


def _int(text: str | None, default: int) -> int:
    if text is None:
        return default
    if not (text.isascii() and text.isdigit()) or int(text[:12]) < (
        1 if default else 0
    ):
        raise SchemaError(f"expected a whole number, found {text[:40]!r}")
    if len(text) > 9:
        raise SchemaError(f"expected at most 9 digits, found {len(text)}",
                          code=ErrorCode.RANGE)  # fmt: skip
    return int(text)


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return iso(ms)


def _schema_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_ID = {"name": "id", "in": "path", "required": True,
       "schema": {"type": "string", "pattern": "^[0-9a-f]{8,64}$"}}  # fmt: skip
_ERRORS = {
    str(status): {"description": why, "content": {"application/json": {"schema": _schema_ref("Error")}}}
    for status, why in ((401, "no or unknown token"), (403, "the token may not"),
                        (404, "no such fact"), (409, "conflict or policy refusal"),
                        (413, "the body is over the server's --max-body"),
                        (422, "the schema refuses the grain or an argument"))
}  # fmt: skip
_FACT = {
    "200": {
        "description": "a fact",
        "content": {"application/json": {"schema": _schema_ref("Fact")}},
    },
    **_ERRORS,
}
_FACTS = {
    "200": {
        "description": "facts",
        "content": {"application/json": {"schema": _schema_ref("Facts")}},
    },
    **_ERRORS,
}
_TIME = {"oneOf": [{"type": "integer", "description": "epoch milliseconds"},
                   {"type": "string", "description": "ISO 8601; no zone means UTC"}]}  # fmt: skip
_EXAMPLE = {"type": "belief", "subject": "alice", "relation": "works_at",
            "object": "Acme", "confidence": 0.9, "namespace": "crm",
            "valid_from": "2024-06-01T00:00:00Z"}  # fmt: skip
_BELIEF = {
    "type": "object", "required": ["type", "subject", "relation", "object", "confidence"],
    "additionalProperties": True,
    "description": "A grain's fields by their full names (a belief here; any grain type "
                   "and any field of the spec is taken). Bytes are {\"$base64\": ...}.",
    "properties": {
        "type": {"type": "string", "description": "the grain type", "example": "belief"},
        "subject": {"type": "string"}, "relation": {"type": "string"},
        "object": {"description": "text, a number, a boolean, or an IRI"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "namespace": {"type": "string", "description": "default shared; a token "
                      "writes only its namespaces (403 otherwise)"},
        "created_at": {**_TIME, "description": "default: now, by the store's clock"},
        "valid_from": {**_TIME, "description": "when it became true (default created_at)"},
        "valid_to": {**_TIME, "description": "when it stops being true (default: open)"},
        "source_type": {"type": "string"}, "author_did": {"type": "string"},
        "context": {"type": "object"},
        "invalidation_policy": {"type": "object", "description": "e.g. {\"mode\": \"locked\"}"},
    },
}  # fmt: skip
_GRAIN_BODY = {"required": True, "content": {
    "application/json": {"schema": _schema_ref("Belief"), "example": _EXAMPLE},
    GRAIN_TYPE: {"schema": {"type": "string", "format": "binary"}}}}  # fmt: skip

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "oms-rdf facts API", "version": "1"},
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Belief": _BELIEF,
            "Error": {"type": "object", "required": ["code", "message"], "properties": {
                "code": {"type": "string"}, "message": {"type": "string"},
                "path": {"type": ["string", "null"]}}},
            "Fact": {"type": "object", "required": ["id", "fields", "status"], "properties": {
                "id": {"type": "string"}, "type": {"type": ["string", "null"]},
                "fields": {"type": "object"}, "namespace": {"type": "string"},
                "status": {"enum": ["active", "superseded", "retracted"]},
                "verification": {"type": "string"},
                "superseded_by": {"type": ["string", "null"]},
                "effective_confidence": {"type": ["number", "null"]},
                "valid_from": {"type": ["string", "null"]}, "valid_to": {"type": ["string", "null"]},
                "system_from": {"type": ["string", "null"]}, "system_to": {"type": ["string", "null"]}}},
            "Facts": {"type": "object", "required": ["facts"], "properties": {
                "facts": {"type": "array", "items": _schema_ref("Fact")},
                "next_cursor": {"type": ["string", "null"]}}},
        },
    },
    "security": [{"bearer": []}],
    "paths": {
        "/v1/facts": {
            "post": {"summary": "Store a belief (or any grain)", "requestBody": _GRAIN_BODY,
                     "responses": {"201": _FACT["200"], **_ERRORS}},
            "get": {"summary": "List facts by status, subject, relation, namespace or time",
                    "parameters": [{"name": n, "in": "query", "required": False,
                                    "schema": {"type": "string"}} for n in
                                   ("status", "subject", "relation", "namespace", "valid_at",
                                    "as_of", "limit", "cursor")],
                    "responses": _FACTS},
        },
        "/v1/facts/search": {"get": {"summary": "Ranked recall (BM25)", "parameters": [
            {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
            {"name": "namespace", "in": "query", "required": False, "schema": {"type": "string"}},
            {"name": "limit", "in": "query", "required": False, "schema": {"type": "string"}}],
            "responses": _FACTS}},
        "/v1/facts/{id}": {
            "parameters": [_ID],
            "get": {"summary": "One fact (JSON, or the raw blob)", "responses": _FACT},
            "put": {"summary": "Supersede it", "requestBody": _GRAIN_BODY, "responses": _FACT},
            "delete": {"summary": "Retract it", "parameters": [
                {"name": "reason", "in": "query", "required": True, "schema": {"type": "string"}},
                {"name": "by", "in": "query", "required": False, "schema": {"type": "string"}}],
                "responses": _FACT},
        },
        "/v1/facts/{id}/ancestors": {"parameters": [_ID], "get": {
            "summary": "The versions before it, first first", "responses": _FACTS}},
        "/v1/facts/{id}/evidence": {"parameters": [_ID], "post": {
            "summary": "Record evidence (SPRT)", "requestBody": {"required": True, "content": {
                "application/json": {"schema": {"type": "object", "properties": {
                    "kind": {"enum": ["supporting", "refuting"]}, "strength": {"type": "number"},
                    "note": {"type": "string"}}}}}},
            "responses": {"200": {"description": "the test's state"}, **_ERRORS}}},
        "/v1/facts/{id}/revise": {"parameters": [_ID], "post": {
            "summary": "Supersede under the entrenchment tiers", "requestBody": {
                "required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["fields"], "properties": {
                        "fields": {"type": "object"}, "force": {"type": "boolean"},
                        "by": {"type": "string"}, "justification": {"type": "string"}}}}}},
            "responses": _FACT}},
        "/v1/facts/{id}/erase": {"parameters": [_ID], "post": {
            "summary": "Erase it, every layer (compliance; needs the erase scope; checks hold)",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["reason"], "properties": {
                    "reason": {"type": "string"}, "by": {"type": "string"}}}}}},
            "responses": {"200": {"description": "what was erased, and what remains"}, **_ERRORS}}},
        "/v1/erasures": {"post": {
            "summary": "Erase every grain naming a person (needs the erase scope)",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["subject", "reason"], "properties": {
                    "subject": {"type": "string"}, "reason": {"type": "string"},
                    "namespace": {"type": "string"}, "by": {"type": "string"}}}}}},
            "responses": {"200": {"description": "what was erased, and what remains"}, **_ERRORS}}},
    },
}  # fmt: skip
