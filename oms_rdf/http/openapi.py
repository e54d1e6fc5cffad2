"""The facts API described: ``/openapi.json`` (OpenAPI 3.1) and, for people, ``/docs``.

>>> sorted(OPENAPI["paths"])[:2]
['/v1/erasures', '/v1/facts']
>>> "<code>/v1/facts/{id}</code>" in docs_page()
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from xml.sax.saxutils import escape

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from .bodies import GRAIN_TYPE

__all__ = ["OPENAPI", "docs_page", "openapi_routes"]


def openapi_routes() -> list[Route]:
    """Return ``/openapi.json`` and ``/docs``."""

    async def openapi(request: Request) -> Response:
        return JSONResponse(OPENAPI)

    async def docs(request: Request) -> Response:
        return HTMLResponse(docs_page())

    return [
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/docs", docs, methods=["GET"]),
    ]


def docs_page() -> str:
    """Return the facts API as an HTML page: each operation, its fields, an example."""
    rows = "".join(
        f"<tr><td>{method.upper()}</td><td><code>{escape(path)}</code></td>"
        f"<td>{escape(op.get('summary', ''))}{_op_details(op)}</td></tr>"
        for path, item in OPENAPI["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and method != "parameters"
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>oms-rdf API"
        "</title></head><body><h1>oms-rdf facts API</h1><p>Machine-readable: "
        "<a href=openapi.json>openapi.json</a>. Send <code>Authorization: Bearer "
        "TOKEN</code> when the server has a token file.</p><table>"
        f"<tr><th>method</th><th>path</th><th>what</th></tr>{rows}</table></body></html>"
    )


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


def _schema_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _param(name: str, *, required: bool = False) -> dict[str, Any]:
    """A query parameter (text)."""
    schema = {"type": "string"}
    return {"name": name, "in": "query", "required": required, "schema": schema}


def _object_body(
    properties: dict[str, Any], required: list[str] | None = None
) -> dict[str, Any]:
    """A required JSON request body: an object of ``properties``."""
    schema: dict[str, Any] = {"type": "object"}
    if required is not None:
        schema["required"] = required
    schema["properties"] = properties
    return {"required": True, "content": {"application/json": {"schema": schema}}}


_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[0-9a-f]{8,64}$"},
}
_ERRORS = {
    str(status): {
        "description": why,
        "content": {"application/json": {"schema": _schema_ref("Error")}},
    }
    for status, why in (
        (401, "no or unknown token"),
        (403, "the token may not"),
        (404, "no such fact"),
        (409, "conflict or policy refusal"),
        (413, "the body is over the server's --max-body"),
        (422, "the schema refuses the grain or an argument"),
    )
}
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
_TIME = {
    "oneOf": [
        {"type": "integer", "description": "epoch milliseconds"},
        {"type": "string", "description": "ISO 8601; no zone means UTC"},
    ]
}
_EXAMPLE = {
    "type": "belief",
    "subject": "alice",
    "relation": "works_at",
    "object": "Acme",
    "confidence": 0.9,
    "namespace": "crm",
    "valid_from": "2024-06-01T00:00:00Z",
}
_BELIEF = {
    "type": "object",
    "required": ["type", "subject", "relation", "object", "confidence"],
    "additionalProperties": True,
    "description": "A grain's fields by their full names (a belief here; any grain type "
    'and any field of the spec is taken). Bytes are {"$base64": ...}.',
    "properties": {
        "type": {
            "type": "string",
            "description": "the grain type",
            "example": "belief",
        },
        "subject": {"type": "string"},
        "relation": {"type": "string"},
        "object": {"description": "text, a number, a boolean, or an IRI"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "namespace": {
            "type": "string",
            "description": "default shared; a token "
            "writes only its namespaces (403 otherwise)",
        },
        "created_at": {**_TIME, "description": "default: now, by the store's clock"},
        "valid_from": {
            **_TIME,
            "description": "when it became true (default created_at)",
        },
        "valid_to": {
            **_TIME,
            "description": "when it stops being true (default: open)",
        },
        "source_type": {"type": "string"},
        "author_did": {"type": "string"},
        "context": {"type": "object"},
        "invalidation_policy": {
            "type": "object",
            "description": 'e.g. {"mode": "locked"}',
        },
    },
}
_GRAIN_BODY = {
    "required": True,
    "content": {
        "application/json": {"schema": _schema_ref("Belief"), "example": _EXAMPLE},
        GRAIN_TYPE: {"schema": {"type": "string", "format": "binary"}},
    },
}

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "oms-rdf facts API", "version": "1"},
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Belief": _BELIEF,
            "Error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "path": {"type": ["string", "null"]},
                },
            },
            "Fact": {
                "type": "object",
                "required": ["id", "fields", "status"],
                "properties": {
                    "id": {"type": "string"},
                    "type": {"type": ["string", "null"]},
                    "fields": {"type": "object"},
                    "namespace": {"type": "string"},
                    "status": {"enum": ["active", "superseded", "retracted"]},
                    "verification": {"type": "string"},
                    "superseded_by": {"type": ["string", "null"]},
                    "split_into": {"type": "array", "items": {"type": "string"}},
                    "effective_confidence": {"type": ["number", "null"]},
                    "valid_from": {"type": ["string", "null"]},
                    "valid_to": {"type": ["string", "null"]},
                    "system_from": {"type": ["string", "null"]},
                    "system_to": {"type": ["string", "null"]},
                },
            },
            "Facts": {
                "type": "object",
                "required": ["facts"],
                "properties": {
                    "facts": {"type": "array", "items": _schema_ref("Fact")},
                    "next_cursor": {"type": ["string", "null"]},
                },
            },
        },
    },
    "security": [{"bearer": []}],
    "paths": {
        "/v1/facts": {
            "post": {
                "summary": "Store a belief (or any grain)",
                "requestBody": _GRAIN_BODY,
                "responses": {"201": _FACT["200"], **_ERRORS},
            },
            "get": {
                "summary": "List facts by status, subject, relation, namespace or time",
                "description": "A page of at most `limit` facts (100 by default) "
                "and `next_cursor`, which asks the next page (null: the last). The "
                "first page pins the listing's point in time: every page answers "
                "the same question. A subject's facts, and a status listing, come "
                "highest effective confidence first; any other listing in the "
                "store's index order, read as it is paged, so a page costs its "
                "rows whatever the store's size.",
                "parameters": [
                    _param(n)
                    for n in "status subject relation namespace valid_at as_of "
                    "limit cursor".split()
                ],
                "responses": _FACTS,
            },
        },
        "/v1/facts/search": {
            "get": {
                "summary": "Ranked recall (BM25)",
                "parameters": [
                    _param("q", required=True),
                    _param("namespace"),
                    _param("valid_at"),
                    _param("as_of"),
                    _param("limit"),
                ],
                "responses": _FACTS,
            }
        },
        "/v1/facts/{id}": {
            "parameters": [_ID],
            "get": {"summary": "One fact (JSON, or the raw blob)", "responses": _FACT},
            "put": {
                "summary": "Supersede it, or for a portion of its valid time",
                "parameters": [_param("valid_from"), _param("valid_to")],
                "requestBody": _GRAIN_BODY,
                "responses": _FACT,
            },
            "delete": {
                "summary": "Retract it, or a portion of its valid time",
                "parameters": [
                    _param("reason", required=True),
                    _param("by"),
                    _param("valid_from"),
                    _param("valid_to"),
                ],
                "responses": _FACT,
            },
        },
        "/v1/facts/{id}/ancestors": {
            "parameters": [_ID],
            "get": {
                "summary": "The versions before it, first first",
                "responses": _FACTS,
            },
        },
        "/v1/facts/{id}/evidence": {
            "parameters": [_ID],
            "post": {
                "summary": "Record evidence (SPRT)",
                "requestBody": _object_body(
                    {
                        "kind": {"enum": ["supporting", "refuting"]},
                        "strength": {"type": "number"},
                        "note": {"type": "string"},
                    },
                ),
                "responses": {"200": {"description": "the test's state"}, **_ERRORS},
            },
        },
        "/v1/facts/{id}/revise": {
            "parameters": [_ID],
            "post": {
                "summary": "Supersede under the entrenchment tiers",
                "requestBody": _object_body(
                    {
                        "fields": {"type": "object"},
                        "force": {"type": "boolean"},
                        "by": {"type": "string"},
                        "justification": {"type": "string"},
                    },
                    required=["fields"],
                ),
                "responses": _FACT,
            },
        },
        "/v1/facts/{id}/erase": {
            "parameters": [_ID],
            "post": {
                "summary": "Erase it, every layer (compliance; needs the erase scope; checks hold)",
                "requestBody": _object_body(
                    {
                        "reason": {"type": "string"},
                        "by": {"type": "string"},
                    },
                    required=["reason"],
                ),
                "responses": {
                    "200": {"description": "what was erased, and what remains"},
                    **_ERRORS,
                },
            },
        },
        "/v1/erasures": {
            "post": {
                "summary": "Erase every grain naming a person (needs the erase scope)",
                "requestBody": _object_body(
                    {
                        "subject": {"type": "string"},
                        "reason": {"type": "string"},
                        "namespace": {"type": "string"},
                        "by": {"type": "string"},
                    },
                    required=["subject", "reason"],
                ),
                "responses": {
                    "200": {"description": "what was erased, and what remains"},
                    **_ERRORS,
                },
            }
        },
        "/v1/transactions": {
            "post": {
                "summary": "Put, supersede, retract and contradict facts (over a portion "
                "of valid time: valid_from, valid_to) in one transaction: all or nothing",
                "requestBody": _object_body(
                    {"operations": {"type": "array", "items": {"type": "object"}}},
                    required=["operations"],
                ),
                "responses": {
                    "201": {"description": "what each operation made or targeted"},
                    **_ERRORS,
                },
            }
        },
    },
}
