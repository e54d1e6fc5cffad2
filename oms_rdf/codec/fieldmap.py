"""The field maps: full names <-> short keys and the kind of each value (spec §6).

A :class:`Table` is one field map: for every field its full name, its short key
on the wire, its :class:`Kind`, and the nested field map of a map-valued field.
:data:`CORE_TABLE` holds the core fields every type shares (spec §6.1, digest §4);
the nested tables compact ``content_refs``, ``embedding_refs``, ``related_to``,
Workflow ``edges`` and Trigger ``config``. :mod:`.schema` extends the core table
with each grain type's own fields.

>>> CORE_TABLE.by_full["confidence"].short, CORE_TABLE.by_short["ca"].full
('c', 'created_at')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any

from .rules import content_ref_shape

__all__ = [
    "CORE_TABLE",
    "DELEGATION",
    "EDGE",
    "INDEX_FIELDS",
    "INT_CONFIG",
    "RELATION_TYPES",
    "Field",
    "Kind",
    "Table",
    "make_table",
]


class Kind(Enum):
    """What a field's value must be; the codec converts and checks by kind."""

    STR = auto()  # text
    INT = auto()  # integer in int64/uint64 range
    COUNT = auto()  # integer >= 0
    BYTE = auto()  # integer 0..255
    TIME = auto()  # epoch milliseconds; an aware datetime is converted when encoding
    FLOAT = auto()  # float64; an int is written as float64
    UNIT = auto()  # float64 in [0, 1]
    NONNEG = auto()  # float64 >= 0
    BOOL = auto()
    MAP = auto()  # map with string keys
    STRS = auto()  # array of text
    BYTES_LIST = auto()  # array of integers 0..255 (type bytes)
    MAPS = auto()  # array of maps
    LIST = auto()  # array of anything
    ADDR = auto()  # content address: 64 lowercase hex digits
    ADDRS = auto()  # array of content addresses
    OBJECT = auto()  # text or map (the object of a triple)
    ANY = auto()


@dataclass(frozen=True, slots=True)
class Field:
    """One field: its full name, its short key on the wire, its kind."""

    full: str
    short: str
    kind: Kind
    nested: Table | None = None  # field map of each element (MAPS) or of the map (MAP)


@dataclass(frozen=True, slots=True)
class Table:
    """A field map: full name <-> short key, and the required fields of the map."""

    fields: tuple[Field, ...]
    required: tuple[str, ...] = ()
    enums: Mapping[str, frozenset[str]] = field(default_factory=dict)
    check: Callable[[Mapping[str, Any], str], None] | None = None  # whole-map rule
    by_full: Mapping[str, Field] = field(init=False, repr=False)
    by_short: Mapping[str, Field] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        by_full = {f.full: f for f in self.fields}
        by_short = {f.short: f for f in self.fields}
        if len(by_full) != len(self.fields) or len(by_short) != len(self.fields):
            raise AssertionError(f"field map is not a bijection: {self.fields}")
        object.__setattr__(self, "by_full", by_full)
        object.__setattr__(self, "by_short", by_short)

    def extend(
        self,
        extra: Iterable[Field],
        required: Iterable[str] = (),
        enums: Mapping[str, frozenset[str]] | None = None,
    ) -> Table:
        """Return this table with ``extra`` fields, required names and enums added."""
        return Table(
            (*self.fields, *extra),
            (*self.required, *required),
            {**self.enums, **(enums or {})},
        )


def make_table(
    *rows: tuple[str, str, Kind] | Field,
    required: tuple[str, ...] = (),
    enums: Mapping[str, Iterable[str]] | None = None,
    check: Callable[[Mapping[str, Any], str], None] | None = None,
) -> Table:
    """Return the table of ``rows``: ``(full, short, kind)`` triples or fields."""
    fields = tuple(r if isinstance(r, Field) else Field(*r) for r in rows)
    closed = {k: frozenset(v) for k, v in (enums or {}).items()}
    return Table(fields, required, closed, check)


K = Kind


# Nested maps (spec §7.1, §7.2, §14.2; Workflow edges §6.4). Provenance entries are
# not compacted (§4.3) but their weight is float64 in [0, 1].
CONTENT_REF = make_table(
    ("uri", "u", K.STR),
    ("modality", "m", K.STR),
    ("mime_type", "mt", K.STR),
    ("size_bytes", "sz", K.COUNT),
    ("checksum", "ck", K.STR),
    ("metadata", "md", K.MAP),
    check=content_ref_shape,
)
EMBEDDING_REF = make_table(
    ("vector_id", "vi", K.STR),
    ("model", "mo", K.STR),
    ("dimensions", "dm", K.COUNT),
    ("modality_source", "ms", K.STR),
    ("distance_metric", "di", K.STR),
    ("chunk_index", "ci", K.COUNT),
    ("chunk_text", "ct", K.STR),
    ("chunk_strategy", "cs", K.STR),
    ("chunk_overlap", "co", K.COUNT),
    required=("vector_id", "model", "dimensions"),
)
# §14.3: a closed vocabulary, so that relation names cannot leak personal data.
RELATION_TYPES = frozenset(
    {
        "similar",
        "contradicts",
        "elaborates",
        "generalizes",
        "temporal_next",
        "temporal_prev",
        "causal",
        "supports",
        "refutes",
        "replaces",
        "depends_on",
    }
)
RELATED_TO = make_table(
    ("hash", "h", K.ADDR),
    ("relation_type", "rl", K.STR),
    ("weight", "w", K.UNIT),
    required=("hash", "relation_type"),
    enums={"relation_type": RELATION_TYPES},
)
PROVENANCE = make_table(
    ("source_hash", "source_hash", K.STR),
    ("method", "method", K.STR),
    ("weight", "weight", K.UNIT),
)
EDGE = make_table(
    ("src", "src", K.STR),
    ("dst", "dst", K.STR),
    ("cond", "cond", K.STR),
    ("max_cycles", "mxc", K.COUNT),
    required=("src", "dst"),
)
# Integration-profile keys (Appendix C), compacted inside Trigger `config` only:
# §4.7 says `context` is not compacted recursively, and the Trigger table says
# `config` is (digest §4.4 ambiguity; we take the explicit statement).
INT_CONFIG = make_table(
    *(
        (f"int:{name}", short, K.ANY)
        for name, short in (
            ("base_url", "ib"),
            ("http_method", "ihm"),
            ("http_path", "ihp"),
            ("path_params", "ipp"),
            ("query_params", "iqp"),
            ("body_params", "ibp"),
            ("response_mapping", "irm"),
            ("auth_type", "iat"),
            ("auth_scopes", "ias"),
            ("read_only", "iro"),
            ("connector", "ic"),
            ("docs_url", "idu"),
            ("rate_limit", "irl"),
            ("category", "icat"),
            ("sunset_date", "isd"),
            ("content_type", "ict"),
            ("poll_interval_secs", "ipis"),
            ("cursor_field", "icf"),
            ("cursor_type", "icft"),
            ("webhook_path", "iwp"),
            ("webhook_secret_header", "iwsh"),
            ("cron_expression", "icron"),
            ("timezone", "itz"),
            ("config_schema", "icfg"),
            ("event_schema", "ievt"),
            ("allowed_outbound_hosts", "iaoh"),
        )
    )
)

# Core fields shared by every type (spec §6.1). Index-layer fields are listed so
# that foreign blobs carrying them decode with full names; we never write them.
CORE_TABLE = make_table(
    ("type", "t", K.STR),
    ("subject", "s", K.STR),
    ("relation", "r", K.STR),
    ("object", "o", K.OBJECT),
    ("confidence", "c", K.UNIT),
    ("source_type", "st", K.STR),
    ("created_at", "ca", K.TIME),
    ("temporal_type", "tt", K.STR),
    ("valid_from", "vf", K.TIME),
    ("valid_to", "vt", K.TIME),
    ("system_valid_from", "svf", K.TIME),
    ("system_valid_to", "svt", K.TIME),
    ("context", "ctx", K.MAP),
    ("superseded_by", "sb", K.STR),
    ("contradicted", "ct", K.BOOL),
    ("importance", "im", K.UNIT),
    ("author_did", "adid", K.STR),
    ("namespace", "ns", K.STR),
    ("user_id", "user", K.STR),
    ("structural_tags", "tags", K.STRS),
    ("derived_from", "df", K.ADDRS),
    ("consolidation_level", "cl", K.COUNT),
    ("success_count", "sc", K.COUNT),
    ("failure_count", "fc", K.COUNT),
    Field("provenance_chain", "pc", K.MAPS, PROVENANCE),
    ("origin_did", "odid", K.STR),
    ("origin_namespace", "ons", K.STR),
    Field("content_refs", "cr", K.MAPS, CONTENT_REF),
    Field("embedding_refs", "er", K.MAPS, EMBEDDING_REF),
    Field("related_to", "rt", K.MAPS, RELATED_TO),
    ("_elided", "_e", K.MAP),
    ("_disclosure_of", "_do", K.STR),
    ("invalidation_policy", "ip", K.MAP),
    ("supersession_justification", "sj", K.STR),
    ("supersession_auth", "sa", K.LIST),
    ("owner", "own", K.MAP),
    ("category", "cat", K.BYTE),
    ("run_id", "rid", K.STR),
    ("role", "role", K.STR),
    ("access_count", "ac", K.COUNT),
    ("last_accessed_at", "laa", K.TIME),
    ("timestamp_ms", "tms", K.TIME),
    ("observer_did", "obsdid", K.STR),
    ("subject_did", "sdid", K.STR),
    ("session_id", "sid2", K.STR),
    ("entity_id", "eid", K.STR),
    ("epistemic_status", "epstat", K.STR),
    ("verification_status", "vstatus", K.STR),
    ("rec_status", "rstat", K.STR),
    ("requires_human_review", "rhr", K.BOOL),
    ("processing_basis", "pbasis", K.STR),
    ("identity_state", "idst", K.STR),
    ("license", "lic", K.STR),
    ("trusted_timestamp", "tts", K.MAP),
    ("invalidation_type", "itype", K.STR),
    ("invalidation_reason", "ireason", K.STR),
    ("invalidation_initiator", "iinit", K.STR),
    ("retention_policy", "rpol", K.MAP),
    ("recall_priority", "rpri", K.STR),
    ("embedding_text", "et", K.STR),
)

# Index-layer fields (spec §5.6, §28.3): the store keeps them beside the blob.
# `contradicted` is the pre-1.2 spelling of a contradiction mark, an index mutation.
INDEX_FIELDS: Mapping[str, str] = {
    "superseded_by": "store.supersede(old, new)",
    "system_valid_to": "store.supersede / store.retract / store.contradict",
    "verification_status": "store.set_verification(addr, status)",
    "rec_status": "the Recommendation audit chain",
    "access_count": "the store's access counters",
    "last_accessed_at": "the store's access counters",
    "contradicted": "store.contradict(addr)",
}

# Delegation scope (§6.11): carried by Goal and Fact grains.
DELEGATION = (
    Field("authorized_namespaces", "ans", K.STRS),
    Field("authorized_types", "atypes", K.BYTES_LIST),
    Field("authorized_tools", "atools", K.STRS),
    Field("delegation_depth", "ddepth", K.COUNT),
    Field("delegation_expiry", "dexp", K.TIME),
    Field("context_grains", "cgrains", K.STRS),
    Field("return_to", "retdid", K.STR),
)
