"""Commands on grain files, no store needed: encode, decode, verify, keys and signatures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..codec import content_address, decode, encode, verify
from ..codec.grain import Grain
from ..codec.signing import (
    disclose,
    generate_key,
    is_envelope,
    sign,
    verify_signature,
)
from ..errors import SignatureError
from .output import dump_json
from .reading import iso_times, one_grain, read_blob, read_bytes, read_json, read_key

# A folder given where a file is written fails when it is written: ERR_STORE, as
# for every command (not click's usage error).
OUTPUT = click.Path()


@click.command("encode")
@click.argument("source")
@click.option("--hex", "as_hex", is_flag=True, help="Print the blob as hex instead.")
@click.option(
    "-o",
    "--output",
    type=OUTPUT,
    help="Write the blob here (one grain's bytes; an .mg container is export's).",
)
def encode_cmd(source: str, as_hex: bool, output: str | None) -> None:
    """Encode a JSON grain (full field names) and print its content address.

    Example:

        oms-rdf encode grain.json -o grain.bin
    """
    blob = encode(iso_times(read_json(source), source))
    if output:
        Path(output).write_bytes(blob)
    click.echo(blob.hex() if as_hex else content_address(blob))


@click.command("decode")
@click.argument("source")
def decode_cmd(source: str) -> None:
    """Decode a blob (binary or hex text) and print it as JSON with full names.

    Example:

        oms-rdf decode grain.bin
    """
    click.echo(dump_json(decode(read_blob(source))))


@click.command("verify")
@click.argument("source")
@click.argument("address")
def verify_cmd(source: str, address: str) -> None:
    """Check that a blob hashes to ADDRESS; exit 1 if it does not.

    Example:

        oms-rdf verify grain.bin 3288d0d41cf49a1d428e404f0b6a6fe60388be9536937557f6139b813d53a520
    """
    verify(read_blob(source), address)
    click.echo(f"ok {address}")


@click.command("keygen")
@click.option(
    "-o",
    "--output",
    type=OUTPUT,
    required=True,
    help="Where to write the private key (hex, mode 0600).",
)
@click.option("--seed", help="64 hex digits: a deterministic key (for tests only).")
def keygen_cmd(output: str, seed: str | None) -> None:
    """Make an Ed25519 signing key; print its did:key.

    Example:

        oms-rdf keygen -o agent.key
    """
    try:
        raw = bytes.fromhex(seed) if seed else None
    except ValueError:
        raise click.BadParameter("64 hex digits", param_hint="--seed") from None
    key = generate_key(raw)
    path = Path(output)
    # Created, never replaced: another key there would be lost with its DID.
    with path.open("x", encoding="ascii") as out:
        path.chmod(0o600)
        out.write(key.private_bytes().hex() + "\n")
    click.echo(key.did)


@click.command("sign")
@click.argument("grain", metavar="SOURCE", callback=one_grain)
@click.option("--key", "key_path", required=True, help="Private key file from keygen.")
@click.option("-o", "--output", type=OUTPUT, help="Write the envelope here.")
def sign_cmd(grain: Any, key_path: str, output: str | None) -> None:
    """Sign a grain (JSON, or a blob with the signed flag) into a COSE_Sign1 envelope.

    A JSON grain is encoded with the signed flag set. Prints the envelope as hex
    unless -o is given. Example:

        oms-rdf sign grain.json --key agent.key -o grain.cose
    """
    blob = (
        grain if isinstance(grain, bytes) else Grain.from_dict(grain, signed=True).blob
    )
    envelope = sign(blob, read_key(key_path))
    if output:
        Path(output).write_bytes(envelope)
        click.echo(content_address(blob))
    else:
        click.echo(envelope.hex())


@click.command("verify-signature")
@click.argument("source")
def verify_signature_cmd(source: str) -> None:
    """Verify a COSE_Sign1 envelope (binary or hex); print the address and signer.

    Example:

        oms-rdf verify-signature grain.cose
    """
    data = read_bytes(source)
    if not is_envelope(data):
        try:
            data = bytes.fromhex(data.decode("ascii", "replace").strip())
        except ValueError:
            raise SignatureError(
                f"{source} is neither a COSE_Sign1 envelope nor its hex", path=source
            ) from None
    blob, did = verify_signature(data)
    click.echo(f"ok {content_address(blob)} signed by {did}")


@click.command("disclose")
@click.argument("item", metavar="SOURCE", callback=one_grain)
@click.option(
    "--elide",
    "fields",
    multiple=True,
    required=True,
    help="A field to hide (repeatable).",
)
def disclose_cmd(item: Any, fields: tuple[str, ...]) -> None:
    """Print a disclosed view of a grain (blob or JSON) with FIELDS replaced by hashes.

    Example:

        oms-rdf disclose grain.bin --elide user_id --elide subject
    """
    grain = Grain.from_blob(item) if isinstance(item, bytes) else Grain.from_dict(item)
    click.echo(dump_json(disclose(grain.fields, grain.address, fields)))


COMMANDS = [
    encode_cmd,
    decode_cmd,
    verify_cmd,
    keygen_cmd,
    sign_cmd,
    verify_signature_cmd,
    disclose_cmd,
]
