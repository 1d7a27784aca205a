"""The case model: one eval case as a case file states it (`CaseModel`, pydantic) and as a run
keeps it (`Case`, a small slotted object), with a conversation's turns and the fields the system
never sees. Cases are validated one by one (`validate_case`), so one bad case never hides the
others. The suite's settings are `core/suite_schema.py`, the trace a system returns
`core/trace.py`, the checks of single fields `core/field_checks.py`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from .field_checks import checked_answer_schema, checked_marker_names

__all__ = [
    "Case",
    "CaseModel",
    "ToolExpectation",
    "ValidationError",
    "validate_case",
    "SYSTEM_HIDDEN_FIELDS",
]


class ToolExpectation(BaseModel):
    """An expected tool call; `args`, when given, must match the call's arguments exactly."""

    model_config = ConfigDict(extra="forbid")
    name: str
    args: dict[str, Any] | None = None


class RubricItem(BaseModel):
    """A weighted rubric item; a plain string is an item of weight 1."""

    model_config = ConfigDict(extra="forbid")
    item: str = Field(min_length=1)
    weight: float = Field(1.0, gt=0, allow_inf_nan=False)


# A knowledge-graph edge as cases and traces state it: [subject, relation, object]; a label may
# be a whole number (`["Marie Curie", "born in year", 1867]`), compared as its digits.
TripleLabel = str | StrictInt
Triple = tuple[TripleLabel, TripleLabel, TripleLabel]

MaxToolCalls = Annotated[int, Field(ge=0)] | dict[str, Annotated[int, Field(ge=0)]] | None


class ContextId(BaseModel):
    """A gold context item given by id (`{"id": "D1:3"}`): the retrieved ids must hold it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)


class TurnModel(BaseModel):
    """One user message of a conversation case, with this turn's own expectations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: str
    expected_tools: list[str | ToolExpectation] | None = None
    tool_order: Literal["any", "strict"] = "any"
    max_tool_calls: MaxToolCalls = None
    expected_docs: list[str] | None = None
    reference: str | None = None
    unanswerable: bool = False


class CaseModel(BaseModel):
    """One eval case as a case file states it. Unknown fields are kept: the system receives them
    with `input`. Validation only: a run keeps each case as a `Case` (see `validate_case`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(min_length=1)
    input: str  # a conversation case may leave it out: its first turn's input
    category: str | None = None
    group: str | None = None
    marks: list[str] = []
    xfail: str | None = None
    skip: str | None = None
    expected_tools: list[str | ToolExpectation] | None = None
    # "strict": the expected tools are called in the listed order (others may come between).
    tool_order: Literal["any", "strict"] = "any"
    # At most this many tool calls in all, or per tool name ({"search_kb": 1}).
    max_tool_calls: MaxToolCalls = None
    expected_docs: list[str] | None = None
    reference: str | None = None
    # Other answers that count as the reference (a benchmark's aliases): the benchmark scorers
    # (musique_f1, 2wikimultihopqa_f1, ...) take the best over the reference and these.
    reference_aliases: list[str] | None = None
    # Gold supporting facts, [title, sentence index] pairs (HotpotQA, 2WikiMultihopQA): the
    # *_sp_f1 stages score the trace's `supporting_facts` against them.
    expected_facts: list[tuple[str, int]] | None = None
    # Gold context for the `context_coverage` stage: texts the retrieved context should contain,
    # or {"id": ...} objects the retrieved ids should hold.
    expected_context: list[str | ContextId] | None = None
    # Items the answer must rank, in the right order (the `kendall_tau` stage).
    expected_order: list[str] | None = None
    unanswerable: bool = False
    # Data files this case's system run reads, replacing the suite's `inputs` for this case
    # (None: the suite's). Keyed per case, so an edit stales only the cases that read the file.
    inputs: list[str] | None = None
    # The suite user whose data (conversations, documents, ...) this case asks about: its files
    # key the case, `setup_user` ingests them, and it is the case's group in the reports.
    user: str | None = Field(None, min_length=1)
    # Facts about the case for the people reading it (a benchmark's level, a trap answer): never
    # given to the system, never in a key.
    metadata: dict[str, Any] | None = None
    expected_triples: list[Triple] | None = None  # the `graph` stage's gold edges
    answer_schema: dict[str, Any] | bool | None = None  # the `schema` stage's JSON Schema
    rubric: list[str | RubricItem] | None = None  # the `rubric` stage's items
    # A conversation: user messages (strings, or objects with their own expectations).
    turns: list[str | TurnModel] | None = Field(None, min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _conversation_input(cls, raw: Any) -> Any:
        """A conversation's `input` is its first turn's; giving both would say it twice."""
        if isinstance(raw, dict) and isinstance(raw.get("turns"), list) and raw["turns"]:
            if "input" in raw:
                raise ValueError(
                    'a conversation case gives its messages in "turns"; remove "input" (the '
                    "first turn is the conversation's input)"
                )
            first = raw["turns"][0]
            first_input = first.get("input") if isinstance(first, dict) else first
            if isinstance(first_input, str):
                raw = {**raw, "input": first_input}
        return raw

    _answer_schema = field_validator("answer_schema")(checked_answer_schema)

    @field_validator("rubric")
    @classmethod
    def _rubric_items(cls, value: Any) -> Any:
        if value is not None and not value:
            raise ValueError("give at least one rubric item, or leave the field out")
        for item in value or []:
            if isinstance(item, str) and not item.strip():
                raise ValueError("a rubric item is an empty string")
        return value

    _marker_safe = field_validator("category", "marks")(checked_marker_names)

    @model_validator(mode="after")
    def _user_is_the_group(self) -> CaseModel:
        if self.user is not None and self.group is not None and self.group != self.user:
            raise ValueError(
                f'a case of user {self.user!r} is grouped by its user: remove "group" '
                f"({self.group!r}) or make it the user's id"
            )
        return self


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a conversation case as a run keeps it."""

    input: str
    expected_tools: list[str | ToolExpectation] | None = None
    tool_order: str = "any"
    max_tool_calls: int | dict[str, int] | None = None
    expected_docs: list[str] | None = None
    reference: str | None = None
    unanswerable: bool = False

    @property
    def has_expectations(self) -> bool:
        return (
            self.expected_tools is not None
            or self.max_tool_calls is not None
            or self.expected_docs is not None
            or self.reference is not None
            or self.unanswerable
        )


@dataclass(frozen=True, slots=True)
class Case:
    """A validated case as a run keeps it, one per item: CaseModel's fields, with the unknown ones
    in `extra`. A pydantic instance costs ~1.5 KB, this ~0.2 KB (10,000 items: ~13 MB less)."""

    id: str
    input: str
    category: str | None = None
    group: str | None = None
    marks: tuple[str, ...] = ()
    xfail: str | None = None
    skip: str | None = None
    expected_tools: list[str | ToolExpectation] | None = None
    tool_order: str = "any"
    max_tool_calls: int | dict[str, int] | None = None
    expected_docs: list[str] | None = None
    reference: str | None = None
    reference_aliases: list[str] | None = None
    expected_facts: list[tuple[str, int]] | None = None
    expected_context: tuple[str | dict[str, str], ...] | None = None
    expected_order: list[str] | None = None
    unanswerable: bool = False
    inputs: tuple[str, ...] | None = None  # the case's own `inputs`, if it names them
    user: str | None = None  # the suite user the case belongs to (its group)
    metadata: dict[str, Any] | None = None
    expected_triples: list[Triple] | None = None
    answer_schema: dict[str, Any] | bool | None = None
    rubric: tuple[tuple[str, float], ...] | None = None  # (item, weight) pairs
    turns: tuple[Turn, ...] | None = None  # a conversation case's turns (None: one question)
    extra: dict[str, Any] | None = None  # the case file's other fields, for the system
    # The case file's fields that the suite's own stages read (`@ev.stage(..., reads=[...])`):
    # moved out of `extra` at collection, so never given to the system nor in its key.
    stage_fields: dict[str, Any] | None = None


def validate_case(raw: Any) -> Case:
    """One raw case from a case file, validated; raises ValidationError as CaseModel does."""
    model = CaseModel.model_validate(raw)
    fields = dict(model.__dict__)  # the declared fields (pydantic keeps extras apart)
    fields["marks"] = tuple(model.marks)
    if model.inputs is not None:
        fields["inputs"] = tuple(model.inputs)
    if model.user is not None:  # the user is the case's group
        fields["group"] = model.user
    if model.expected_context is not None:  # a tuple: 10,000 cases hold one each
        fields["expected_context"] = tuple(
            item if isinstance(item, str) else {"id": item.id} for item in model.expected_context
        )
    if model.rubric is not None:
        fields["rubric"] = tuple(
            (item, 1.0) if isinstance(item, str) else (item.item, item.weight)
            for item in model.rubric
        )
    if model.turns is not None:
        fields["turns"] = tuple(
            Turn(input=turn) if isinstance(turn, str) else Turn(**turn.__dict__)
            for turn in model.turns
        )
    if model.category:  # a marker name shared by many cases: one string object for all of them
        fields["category"] = sys.intern(model.category)
    # Values many cases repeat (a group or user, tool names, document ids): one string object
    # each, not one per case (10,000 cases: ~1.5 MB less).
    if fields["group"] is not None:
        fields["group"] = sys.intern(fields["group"])
    if model.user is not None:
        fields["user"] = sys.intern(model.user)
    if model.expected_tools is not None:
        fields["expected_tools"] = [
            sys.intern(tool) if isinstance(tool, str) else tool for tool in model.expected_tools
        ]
    if model.expected_docs is not None:
        fields["expected_docs"] = [sys.intern(doc) for doc in model.expected_docs]
    return Case(**fields, extra=model.model_extra or None)


# Fields that describe how to judge a case rather than what the system sees: they are kept out
# of the system's view and out of the trace's recording key, so editing them never needs a
# re-record (judged stages key the ones they read, e.g. `reference`, per verdict).
SYSTEM_HIDDEN_FIELDS = frozenset(
    {
        "id",
        "category",
        "group",
        "marks",
        "xfail",
        "skip",
        "expected_tools",
        "tool_order",
        "max_tool_calls",
        "expected_docs",
        "reference",
        "reference_aliases",
        "expected_facts",
        "expected_context",
        "expected_order",
        "unanswerable",
        "inputs",  # keyed by the files' contents, not by their names
        "metadata",
        "expected_triples",
        "answer_schema",
        "rubric",
    }
)
