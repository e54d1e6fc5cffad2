"""ASGI guards in front of every route: the ``Host`` names a server answers to
(against DNS rebinding), the size of a request body, and CORS (whose refusals
are JSON errors like every other).
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ErrorCode
from .responses import error_response

__all__ = ["LOOPBACK", "BodyLimit", "Cors", "HostCheck"]

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class HostCheck:
    """Refuse a request whose ``Host`` names none of ``hosts`` (any port)."""

    def __init__(self, app: ASGIApp, *, hosts: Sequence[str]) -> None:
        self.app, self.hosts = app, {h.lower() for h in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a request, or refuse it with a 400 naming the hosts allowed."""
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"host", b"").decode("latin-1").lower()
            name = given.rsplit(":", 1)[0] if not given.endswith("]") else given
            if name.strip("[]") not in self.hosts:
                response = error_response(
                    400,
                    ErrorCode.SCHEMA,
                    f"this server answers only to {sorted(self.hosts)}; the Host "
                    f"header names {given[:100]!r}",
                    path="Host",
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class _TooLargeError(Exception):
    """A request body past the server's limit (raised while it is read)."""


class BodyLimit:
    """Refuse a body over ``max_body`` bytes with a 413: from its content-length
    before reading it, or as soon as the bytes read pass the limit."""

    def __init__(self, app: ASGIApp, *, max_body: int) -> None:
        self.app, self.max_body = app, max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a request, reading at most ``max_body`` bytes of its body."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body:
            await self._refuse(send, int(declared))
            return
        seen = 0
        started = False

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise _TooLargeError
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, watched)
        except _TooLargeError:
            if not started:
                await self._refuse(send, seen)
        except ClientDisconnect:
            return  # gone before its body was read: nothing ran, no one to answer

    async def _refuse(self, send: Send, size: int) -> None:
        response = error_response(
            413,
            ErrorCode.RANGE,
            f"the body has {size:,}+ bytes; this server takes at most "
            f"{self.max_body:,} (--max-body)",
            headers={"connection": "close"},
        )
        await response({"type": "http"}, _nothing, send)


async def _nothing() -> Message:  # pragma: no cover - a response never receives
    return {"type": "http.disconnect"}


class Cors(CORSMiddleware):
    """Starlette's CORS, with a refused preflight answered as our JSON error."""

    def preflight_response(self, request_headers: Headers) -> Response:
        """Answer a preflight; a refusal names what was disallowed."""
        answer = super().preflight_response(request_headers)
        if answer.status_code != 400:
            return answer
        headers = {k: v for k, v in answer.headers.items()
                   if k.lower().startswith("access-control-") or k.lower() == "vary"}  # fmt: skip
        why = bytes(answer.body).decode()  # "Disallowed CORS origin, headers"
        return error_response(400, ErrorCode.SCHEMA, why, headers=headers)
