"""The ``oms-rdf`` command line: thin commands over the library."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from .codec import content_address, decode, encode, verify
from .errors import DecodeError, EncodeError, ErrorCode, OmsError

F = TypeVar("F", bound=Callable[..., Any])


class _Group(click.Group):
    """Turns every OmsError into one line ``error: ERR_X: message`` and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OmsError as exc:
            if ctx.params.get("traceback"):
                raise
            click.echo(f"error: {exc}", err=True)
            ctx.exit(1)


@click.group(cls=_Group)
@click.option("--traceback", is_flag=True, help="Show the full stack on errors.")
@click.version_option(package_name="oms-rdf")
def cli(traceback: bool) -> None:
    """Open Memory Specification grains as a bi-temporal RDF knowledge graph."""


def _read(source: str) -> bytes:
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except OSError as exc:
        raise click.FileError(source, hint=exc.strerror) from exc


def _read_json(source: str) -> Any:
    data = _read(source)
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EncodeError(
            f"{source} is not JSON: {exc}", code=ErrorCode.CORRUPT, path=source
        ) from exc


def _read_blob(source: str) -> bytes:
    """Read a blob file, or a file of hex text (whitespace ignored)."""
    data = _read(source)
    if data[:1] == b"\x01":
        return data
    try:
        return bytes.fromhex(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise DecodeError(
            f"{source} is neither a blob (first byte 0x01) nor hex text; "
            f"first byte is 0x{data[:1].hex() or '(empty)'}",
            code=ErrorCode.VERSION if data else ErrorCode.TOO_SHORT,
            path=source,
        ) from None


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$base64": base64.b64encode(value).decode()}
    raise TypeError(f"cannot show {type(value).__name__} as JSON")


def dump_json(value: Any) -> str:
    """Return ``value`` as indented JSON; bytes become ``{"$base64": ...}``."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=_json_default)


@cli.command("encode")
@click.argument("source")
@click.option("--hex", "as_hex", is_flag=True, help="Print the blob as hex instead.")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="Write the blob here."
)
def encode_cmd(source: str, as_hex: bool, output: str | None) -> None:
    """Encode a JSON grain (full field names) and print its content address.

    Example:

        oms-rdf encode grain.json -o grain.mg
    """
    blob = encode(_read_json(source))
    if output:
        Path(output).write_bytes(blob)
    click.echo(blob.hex() if as_hex else content_address(blob))


@cli.command("decode")
@click.argument("source")
def decode_cmd(source: str) -> None:
    """Decode a blob (binary or hex text) and print it as JSON with full names.

    Example:

        oms-rdf decode grain.mg
    """
    click.echo(dump_json(decode(_read_blob(source))))


@cli.command("verify")
@click.argument("source")
@click.argument("address")
def verify_cmd(source: str, address: str) -> None:
    """Check that a blob hashes to ADDRESS; exit 1 if it does not.

    Example:

        oms-rdf verify grain.mg 3288d0d41cf49a1d428e404f0b6a6fe60388be9536937557f6139b813d53a520
    """
    verify(_read_blob(source), address)
    click.echo(f"ok {address}")


@cli.command("demo")
def demo_cmd() -> None:
    """Show the codec on sample grains.

    Example:

        oms-rdf demo
    """
    from .demo import run_demo

    run_demo(click.echo)


def main() -> None:
    """Run the ``oms-rdf`` command line."""
    cli(prog_name="oms-rdf")
