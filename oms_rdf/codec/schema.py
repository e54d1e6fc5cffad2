"""The OMS grain schema as data: types, type bytes, field maps, field kinds, rules.

One table drives both directions of the codec: :data:`CORE_FIELDS` plus the
per-type fields give, for every grain type, the bijection between full field
names and the short keys on the wire (spec §6, digest §4), the kind of each value,
and the nested maps that are compacted too (``content_refs``, ``embedding_refs``,
``related_to``, Workflow ``edges``, Trigger ``config``).

>>> BELIEF.byte, BELIEF.table.by_full["confidence"].short
(1, 'c')
>>> type_for_name("fact") is BELIEF
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any

from ..errors import ErrorCode, SchemaError

__all__ = [
    "ALL_TYPES",
    "BELIEF",
    "CORE_TABLE",
    "INDEX_FIELDS",
    "TYPE_NAMES",
    "Field",
    "GrainType",
    "Kind",
    "Table",
    "type_for_byte",
    "type_for_name",
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


def _t(
    *rows: tuple[str, str, Kind] | Field,
    required: tuple[str, ...] = (),
    enums: Mapping[str, Iterable[str]] | None = None,
    check: Callable[[Mapping[str, Any], str], None] | None = None,
) -> Table:
    fields = tuple(r if isinstance(r, Field) else Field(*r) for r in rows)
    closed = {k: frozenset(v) for k, v in (enums or {}).items()}
    return Table(fields, required, closed, check)


K = Kind


# Nested maps (spec §7.1, §7.2, §14.2; Workflow edges §6.4). Provenance entries are
# not compacted (§4.3) but their weight is float64 in [0, 1].
def _content_ref_shape(entry: Mapping[str, Any], path: str) -> None:
    # §7.1: a reference needs uri + modality; a §27.5 citation needs its own pair.
    if not ({"uri", "modality"} <= entry.keys() or CITATION_KEYS <= entry.keys()):
        raise SchemaError(
            "a content_refs entry needs uri and modality, or citation_type and "
            f"identifier; found keys {sorted(entry)}",
            path=path,
        )


CITATION_KEYS = frozenset({"citation_type", "identifier"})  # §27.5 citation entries
CONTENT_REF = _t(
    ("uri", "u", K.STR),
    ("modality", "m", K.STR),
    ("mime_type", "mt", K.STR),
    ("size_bytes", "sz", K.COUNT),
    ("checksum", "ck", K.STR),
    ("metadata", "md", K.MAP),
    check=_content_ref_shape,
)
EMBEDDING_REF = _t(
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
RELATED_TO = _t(
    ("hash", "h", K.ADDR),
    ("relation_type", "rl", K.STR),
    ("weight", "w", K.UNIT),
    required=("hash", "relation_type"),
    enums={"relation_type": RELATION_TYPES},
)
PROVENANCE = _t(
    ("source_hash", "source_hash", K.STR),
    ("method", "method", K.STR),
    ("weight", "weight", K.UNIT),
)
EDGE = _t(
    ("src", "src", K.STR),
    ("dst", "dst", K.STR),
    ("cond", "cond", K.STR),
    ("max_cycles", "mxc", K.COUNT),
    required=("src", "dst"),
)
# Integration-profile keys (Appendix C), compacted inside Trigger `config` only:
# §4.7 says `context` is not compacted recursively, and the Trigger table says
# `config` is (digest §4.4 ambiguity; we take the explicit statement).
INT_CONFIG = _t(
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
CORE_TABLE = _t(
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

Rule = Callable[[Mapping[str, Any]], None]


@dataclass(frozen=True, slots=True)
class GrainType:
    """One grain type: its byte, the type strings it accepts, its field map and rules."""

    byte: int
    names: tuple[str, ...]  # accepted type strings; names[0] is what we write
    table: Table
    rules: tuple[Rule, ...] = ()

    @property
    def name(self) -> str:
        """The type string new grains of this type are written with."""
        return self.names[0]


def _fail(msg: str, path: str, code: ErrorCode = ErrorCode.SCHEMA) -> SchemaError:
    return SchemaError(msg, code=code, path=path)


def _require_nonempty(g: Mapping[str, Any], name: str, why: str) -> None:
    if name not in g:
        raise _fail(f"missing required field {name!r} ({why})", f"$.{name}")
    value = g[name]
    if value == "" or value == [] or value == {}:
        raise _fail(
            f"required field {name!r} is empty ({why})", f"$.{name}", ErrorCode.EMPTY
        )


# --- per-type rules that a table cannot say (spec §8) -----------------------------


def _event_content(g: Mapping[str, Any]) -> None:
    # §8.2: content may be left out when content_blocks or s/r/o describe the event.
    if "content_blocks" in g or all(k in g for k in ("subject", "relation", "object")):
        return
    _require_nonempty(g, "content", "an event needs content, content_blocks or s/r/o")


def _workflow_graph(g: Mapping[str, Any]) -> None:
    if "nodes" not in g and "steps" in g:
        return  # a 1.0-1.3 workflow: `steps` is kept as an unknown field
    _require_nonempty(g, "nodes", "a workflow needs at least one node")
    nodes = g["nodes"]
    if len(set(nodes)) != len(nodes):
        dup = next(n for n in nodes if nodes.count(n) > 1)
        raise _fail(f"node ids must be unique; {dup!r} appears twice", "$.nodes")
    known = set(nodes)
    for i, edge in enumerate(g.get("edges", ())):
        for end in ("src", "dst"):
            if edge.get(end) not in known:
                raise _fail(
                    f"edge {end} {edge.get(end)!r} names no node of {sorted(known)}",
                    f"$.edges[{i}].{end}",
                )
    for name in ("bindings", "retries"):
        for key in g.get(name, {}):
            if key not in known:
                raise _fail(f"{name} key {key!r} names no node", f"$.{name}.{key}")


_TOOL_PHASES: Mapping[str | None, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # phase: (required, must not be present) — spec §27.1
    "definition": (
        ("tool_name", "tool_description", "input_schema"),
        (
            "input",
            "content",
            "is_error",
            "stdout",
            "stderr",
            "exit_code",
            "duration_ms",
        ),
    ),
    "call": (
        ("tool_name", "input"),
        ("content", "is_error", "stdout", "stderr", "exit_code", "duration_ms"),
    ),
    "result": (("tool_call_id", "content", "is_error"), ()),
    None: (("tool_name", "input", "content", "is_error"), ()),
}


def _tool_phase(g: Mapping[str, Any]) -> None:
    if g["type"] == "tool_call":
        return  # 1.0/1.1 ToolCall used args/res/ok, kept as unknown fields
    phase = g.get("tool_phase")
    required, forbidden = _TOOL_PHASES[phase]
    for name in required:
        if name not in g:
            raise _fail(
                f"a tool grain in phase {phase or 'complete'!r} needs {name!r}",
                f"$.{name}",
            )
    for name in forbidden:
        if name in g:
            raise _fail(
                f"a tool grain in phase {phase!r} must not carry {name!r}", f"$.{name}"
            )


def _observation(g: Mapping[str, Any]) -> None:
    if g.get("observer_type") == "human" and "observer_model" in g:
        raise _fail(
            "a human observer has no observer_model (spec §8.6)", "$.observer_model"
        )


def _consent(g: Mapping[str, Any]) -> None:
    if g.get("is_withdrawal") is True and "prior_consent" not in g:
        raise _fail(
            "a withdrawal must reference prior_consent (spec §8.10)", "$.prior_consent"
        )


def _recommendation(g: Mapping[str, Any]) -> None:
    proposals = [
        p for p in ("proposal_cal", "proposal_edit", "proposal_data") if p in g
    ]
    if len(proposals) != 1:
        raise _fail(
            f"a recommendation carries exactly one of proposal_cal, proposal_edit, "
            f"proposal_data; found {proposals or 'none'}",
            "$",
        )
    if not isinstance(g["analyzer"].get("id"), str):
        raise _fail(
            "analyzer.id must be a string like 'publisher.name/1'", "$.analyzer.id"
        )


_TRIGGER_NEEDS = {"schedule": "cron", "once": "at_ms", "memory": "predicate"}


def _trigger(g: Mapping[str, Any]) -> None:
    # §6.14: `enabled` is always emitted. The encoder writes it when it is not
    # given; a blob without it is refused rather than re-encoded with it, which
    # would change its address (the round trip is the law).
    if "enabled" not in g:
        raise _fail("a trigger always carries `enabled` (spec §6.14)", "$.enabled")
    kind = g["kind"]
    if kind in ("interval", "polling") and not g.get("interval_secs", 0) > 0:
        raise _fail(
            f"a {kind} trigger needs a positive interval_secs", "$.interval_secs"
        )
    if kind in _TRIGGER_NEEDS and _TRIGGER_NEEDS[kind] not in g:
        need = _TRIGGER_NEEDS[kind]
        raise _fail(f"a {kind} trigger needs {need!r}", f"$.{need}")
    if kind == "composite" and (len(g.get("members", {})) < 2 or "predicate" not in g):
        raise _fail(
            "a composite trigger needs at least 2 members and a predicate", "$.members"
        )


def _grain_type(
    byte: int,
    names: tuple[str, ...],
    rows: Iterable[tuple[str, str, Kind] | Field] = (),
    required: tuple[str, ...] = (),
    enums: Mapping[str, Iterable[str]] | None = None,
    rules: tuple[Rule, ...] = (),
) -> GrainType:
    extra = [r if isinstance(r, Field) else Field(*r) for r in rows]
    frozen = {k: frozenset(v) for k, v in (enums or {}).items()}
    table = CORE_TABLE.extend(extra, ("created_at", *required), frozen)
    return GrainType(byte, names, table, rules)


BELIEF = _grain_type(
    0x01,
    ("belief", "fact"),
    DELEGATION,
    required=("subject", "relation", "object", "confidence"),
)
EVENT = _grain_type(
    0x02,
    ("event", "episode"),
    [
        ("content", "content", K.STR),
        ("consolidated", "consolidated", K.BOOL),
        ("content_blocks", "cblocks", K.MAPS),
        ("model_id", "mdl", K.STR),
        ("stop_reason", "stopr", K.STR),
        ("token_usage", "toku", K.MAP),
        ("parent_message_id", "pmid", K.STR),
    ],
    rules=(_event_content,),
)
STATE = _grain_type(
    0x03,
    ("state", "checkpoint"),
    [("plan", "plan", K.STRS), ("history", "history", K.MAPS)],
    required=("context",),
)
WORKFLOW = _grain_type(
    0x04,
    ("workflow",),
    [
        ("nodes", "nodes", K.STRS),
        Field("edges", "edges", K.MAPS, EDGE),
        ("bindings", "bind", K.MAP),
        ("retries", "retries", K.MAP),
    ],
    rules=(_workflow_graph,),
)
ACTION = _grain_type(
    0x05,
    ("action", "tool", "tool_call"),
    [
        ("tool_phase", "aphase", K.STR),
        ("tool_name", "tn", K.STR),
        ("input", "inp", K.MAP),
        ("content", "cnt", K.ANY),
        ("is_error", "iserr", K.BOOL),
        ("tool_call_id", "tcid", K.STR),
        ("call_batch_id", "cbid", K.STR),
        ("tool_type", "ttype", K.STR),
        ("tool_version", "tver", K.STR),
        ("execution_mode", "emode", K.STR),
        ("code", "code", K.STR),
        ("stdout", "out", K.STR),
        ("stderr", "err2", K.STR),
        ("exit_code", "xc", K.INT),
        ("interpreter_id", "iid", K.STR),
        ("error", "err", K.STR),
        ("error_type", "etype", K.STR),
        ("duration_ms", "dur", K.COUNT),
        ("parent_task_id", "ptid", K.STR),
        ("tool_description", "tdesc", K.STR),
        ("input_schema", "isch", K.MAP),
        ("output_schema", "osch", K.MAP),
        ("strict", "strict", K.BOOL),
    ],
    enums={"tool_phase": ("definition", "call", "result")},
    rules=(_tool_phase,),
)
OBSERVATION = _grain_type(
    0x06,
    ("observation",),
    [
        ("observer_id", "oid", K.STR),
        ("observer_type", "otype", K.STR),
        ("frame_id", "fid", K.STR),
        ("sync_group", "sg", K.STR),
        ("observation_mode", "omode", K.STR),
        ("observation_scope", "oscope", K.STR),
        ("observer_model", "omdl", K.STR),
        ("compression_ratio", "ocmp", K.NONNEG),
    ],
    required=("observer_id", "observer_type"),
    enums={
        "observation_mode": ("passive", "active", "reflective", "real_time"),
        "observation_scope": ("point", "interval", "session", "longitudinal"),
    },
    rules=(_observation,),
)
GOAL = _grain_type(
    0x07,
    ("goal",),
    [
        ("description", "desc", K.STR),
        ("goal_state", "gs", K.STR),
        ("criteria", "crit", K.STRS),
        ("criteria_structured", "crs", K.MAPS),
        ("priority", "pri", K.INT),
        ("parent_goals", "pgs", K.STRS),
        ("state_reason", "sr", K.STR),
        ("satisfaction_evidence", "se", K.STRS),
        ("progress", "prog", K.UNIT),
        ("delegate_to", "dto", K.STR),
        ("delegate_from", "dfo", K.STR),
        ("expiry_policy", "ep", K.STR),
        ("recurrence", "rec", K.STR),
        ("evidence_required", "evreq", K.COUNT),
        ("rollback_on_failure", "rof", K.STRS),
        ("allowed_transitions", "atr", K.STRS),
        ("depends_on", "depg", K.STRS),
        ("assigned_agent", "asgn", K.STR),
        ("expected_output", "expout", K.STR),
        ("output_grain", "outg", K.STR),
        ("deadline", "dline", K.TIME),
        *DELEGATION,
    ],
    required=("description", "goal_state"),
    enums={"goal_state": ("active", "satisfied", "failed", "suspended")},
)
REASONING = _grain_type(
    0x08,
    ("reasoning",),
    [
        ("premises", "prem", K.STRS),
        ("conclusion", "conc", K.STR),
        ("inference_method", "imethod", K.STR),
        ("alternatives_considered", "altc", K.MAPS),
        ("thinking_content", "think", K.STR),
        ("thinking_redacted", "tredact", K.BOOL),
        ("statistical_context", "statctx", K.MAP),
        ("software_environment", "swenv", K.MAP),
        ("parameter_set", "params", K.MAP),
        ("random_seed", "rseed", K.INT),
    ],
)
CONSENSUS = _grain_type(
    0x09,
    ("consensus",),
    [
        ("participating_observers", "pobs", K.STRS),
        ("threshold", "thold", K.COUNT),
        ("agreement_count", "agcnt", K.COUNT),
        ("dissent_count", "discnt", K.COUNT),
        ("dissent_grains", "disgrn", K.STRS),
        ("agreed_content", "agcon", K.ANY),
    ],
    required=(
        "participating_observers",
        "threshold",
        "agreement_count",
        "dissent_count",
    ),
)
CONSENT = _grain_type(
    0x0A,
    ("consent",),
    [
        ("grantee_did", "gdid", K.STR),
        ("scope", "scope", K.STRS),
        ("is_withdrawal", "isw", K.BOOL),
        ("basis", "basis", K.STR),
        ("jurisdiction", "jur", K.STR),
        ("prior_consent", "pcon", K.STR),
        ("witness_dids", "wdids", K.STRS),
    ],
    required=("subject_did", "grantee_did", "scope", "is_withdrawal"),
    rules=(_consent,),
)
SKILL = _grain_type(
    0x0B,
    ("skill",),
    [
        ("name", "skname", K.STR),
        ("description", "desc", K.STR),
        ("instructions", "instr", K.STR),
        ("when_to_use", "wtu", K.STR),
        ("version", "sver", K.STR),
        ("allowed_tools", "atls", K.STRS),
        ("resources", "res", K.STRS),
        ("dependencies", "deps", K.STRS),
        ("input_modalities", "imod", K.STRS),
        ("output_modalities", "omod", K.STRS),
        ("domain", "dom", K.STR),
        ("holder_did", "hdid", K.STR),
        ("proficiency", "prof", K.UNIT),
        ("practice_count", "prcnt", K.COUNT),
        ("last_practiced_at", "lpa", K.TIME),
        ("strategies", "strat", K.MAPS),
        ("transferable", "xfer", K.BOOL),
    ],
    required=("name", "description"),
)
RECOMMENDATION = _grain_type(
    0x0C,
    ("recommendation",),
    [
        ("target_ref", "tref", K.STR),
        ("analyzer", "anlz", K.MAP),
        ("summary", "summ", K.MAP),
        ("dedup_key", "ddk", K.STR),
        ("proposal_cal", "pcal", K.STR),
        ("proposal_edit", "pedit", K.MAP),
        ("proposal_data", "pdata", K.MAP),
        ("severity", "sev", K.STR),
        ("metric_snapshot", "msnap", K.MAP),
        ("evidence_query", "evq", K.STR),
    ],
    required=("target_ref", "analyzer", "summary", "dedup_key"),
    rules=(_recommendation,),
)
TRIGGER = _grain_type(
    0x0D,
    ("trigger",),
    [
        ("kind", "aknd", K.STR),
        ("workflow", "twf", K.STR),
        ("connector", "tcon", K.STR),
        ("scope", "tscp", K.STR),
        ("enabled", "tena", K.BOOL),
        ("dedup_key", "tdk", K.STRS),
        ("interval_secs", "tint", K.COUNT),
        ("cron", "tcron", K.STR),
        ("at_ms", "tat", K.TIME),
        ("predicate", "tpred", K.MAP),
        ("members", "tmem", K.MAP),
        ("correlate", "tcorr", K.STR),
        ("window_ms", "twin", K.COUNT),
        ("concurrency", "tconc", K.STR),
        ("catchup", "tcatch", K.STR),
        Field("config", "tcfg", K.MAP, INT_CONFIG),
    ],
    required=("kind", "workflow"),
    enums={
        "kind": (
            "interval",
            "schedule",
            "once",
            "polling",
            "memory",
            "webhook",
            "manual",
            "composite",
        )
    },
    rules=(_trigger,),
)

ALL_TYPES: tuple[GrainType, ...] = (
    BELIEF,
    EVENT,
    STATE,
    WORKFLOW,
    ACTION,
    OBSERVATION,
    GOAL,
    REASONING,
    CONSENSUS,
    CONSENT,
    SKILL,
    RECOMMENDATION,
    TRIGGER,
)

# Every published type string -> its type. 1.2/1.3 names first (design §2).
TYPE_NAMES: Mapping[str, GrainType] = {n: t for t in ALL_TYPES for n in t.names}
_BY_BYTE: Mapping[int, GrainType] = {t.byte: t for t in ALL_TYPES}


def type_for_name(name: str) -> GrainType | None:
    """Return the grain type a type string names, or None for an unknown string.

    >>> type_for_name("episode").byte
    2
    """
    return TYPE_NAMES.get(name)


def type_for_byte(byte: int) -> GrainType | None:
    """Return the grain type of a header type byte, or None for 0x0E-0xFF.

    >>> type_for_byte(0x0D).name
    'trigger'
    """
    return _BY_BYTE.get(byte)
