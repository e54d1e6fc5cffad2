"""The OMS grain types as data: type bytes, type strings, field maps, rules.

One table drives both directions of the codec: the core fields of
:mod:`.fieldmap` plus the per-type fields give, for every grain type, the
bijection between full field names and the short keys on the wire (spec §6,
digest §4) and the kind of each value; :mod:`.rules` holds what a table cannot
say. The field-map names are re-exported here.

>>> BELIEF.byte, BELIEF.table.by_full["confidence"].short
(1, 'c')
>>> type_for_name("fact") is BELIEF
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .fieldmap import (
    CORE_TABLE,
    DELEGATION,
    EDGE,
    INDEX_FIELDS,
    INT_CONFIG,
    RELATION_TYPES,
    Field,
    Kind,
    Table,
)
from .rules import (
    Rule,
    consent,
    event_content,
    observation,
    recommendation,
    tool_phase,
    trigger,
    workflow_graph,
)

__all__ = [
    "ALL_TYPES",
    "BELIEF",
    "CORE_TABLE",
    "INDEX_FIELDS",
    "RELATION_TYPES",
    "TYPE_NAMES",
    "Field",
    "GrainType",
    "Kind",
    "Table",
    "type_for_byte",
    "type_for_name",
]

K = Kind


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
    rules=(event_content,),
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
    rules=(workflow_graph,),
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
    rules=(tool_phase,),
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
    rules=(observation,),
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
    rules=(consent,),
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
    rules=(recommendation,),
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
    rules=(trigger,),
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
