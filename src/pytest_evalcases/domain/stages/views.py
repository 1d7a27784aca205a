"""What a user stage receives: read-only views of the case and of the recorded trace.

`case.input`, `case.reference`, `case.id`, `case.expected_docs`, ... (every field a case file
may give), and `case.fields["expected_rows"]` (or `case.expected_rows`): the case file's own
fields. `trace.answer`, `trace.context`, `trace.tool_calls`, ... (the trace's fields, each with
its default when the recording lacks it) and any other field the system returned
(`trace.sql`, `trace["sql"]`, `trace.get("sql")`).

A view cannot be changed, and a value read from it is the stage's own copy (objects read as
dicts whose keys are attributes too: `call.name`, `call["args"]`), so no stage changes what the
next stage, the reports or the cassette see. Each value is copied once per view, when first
read: a stage pays for what it reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from ...core.schema import Case
from ...core.trace import Trace
from ..system import AttributeMapping

# A trace field's value when the recording lacks it (a trace is stored without its defaults).
TRACE_DEFAULTS: dict[str, Any] = {
    name: "" if field.is_required() else field.get_default(call_default_factory=True)
    for name, field in Trace.model_fields.items()
}
_CASE_FIELDS = frozenset(field.name for field in dataclasses.fields(Case)) - {
    "extra",
    "stage_fields",
}


def own_copy(value: Any) -> Any:
    """`value` as a stage may keep and change it: JSON-like values copied (objects as
    AttributeMappings), a case's models and turns as AttributeMappings too."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return AttributeMapping((key, own_copy(item)) for key, item in value.items())
    if isinstance(value, list):
        return [own_copy(item) for item in value]
    if isinstance(value, tuple):
        return tuple(own_copy(item) for item in value)
    if isinstance(value, BaseModel):  # a case's tool expectation
        return own_copy(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a conversation turn
        return AttributeMapping(
            (field.name, own_copy(getattr(value, field.name)))
            for field in dataclasses.fields(value)
        )
    return value


class _ReadOnly:
    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only: a stage cannot change it")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only: a stage cannot change it")


class CaseFields(_ReadOnly, Mapping[str, Any]):
    """The case file's own fields of one case (those the plugin does not define): the ones
    the suite's stages read and the ones given to the system."""

    __slots__ = ("_case", "_copies")

    def __init__(self, case: Case) -> None:
        object.__setattr__(self, "_case", case)
        object.__setattr__(self, "_copies", {})

    def _raw(self, name: str) -> Any:
        case = self._case
        for part in (case.stage_fields, case.extra):
            if part and name in part:
                return part[name]
        raise KeyError(name)

    def __getitem__(self, name: str) -> Any:
        copies = self._copies
        if name not in copies:
            copies[name] = own_copy(self._raw(name))
        return copies[name]

    def __iter__(self) -> Iterator[str]:
        case = self._case
        yield from case.stage_fields or ()
        yield from case.extra or ()

    def __len__(self) -> int:
        return len(self._case.stage_fields or ()) + len(self._case.extra or ())

    def __repr__(self) -> str:
        return f"CaseFields({dict(self)!r})"


class CaseView(_ReadOnly):
    """A case as a user stage reads it: `case.input`, `case.reference`, `case.id`, every other
    field a case file may give, and `case.fields` (the case file's own fields; `case.<name>`
    reads one too)."""

    __slots__ = ("_case", "_copies", "_fields")

    def __init__(self, case: Case) -> None:
        object.__setattr__(self, "_case", case)
        object.__setattr__(self, "_copies", {})
        object.__setattr__(self, "_fields", None)

    @property
    def fields(self) -> CaseFields:
        if self._fields is None:
            object.__setattr__(self, "_fields", CaseFields(self._case))
        return self._fields  # type: ignore[return-value]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and friends look for dunders
            raise AttributeError(name)
        copies = self._copies
        if name in copies:
            return copies[name]
        if name in _CASE_FIELDS:
            value = own_copy(getattr(self._case, name))
        else:
            try:
                value = self.fields[name]
            except KeyError:
                known = ", ".join(self.fields) or "none"
                raise AttributeError(
                    f"case {self._case.id!r} has no field {name!r} (its own fields: {known}); "
                    "case.fields.get(name) reads an optional one"
                ) from None
        copies[name] = value
        return value

    def __repr__(self) -> str:
        return f"CaseView(id={self._case.id!r})"


def _field_property(name: str) -> property:
    """`view.<name>` read without first failing the ordinary attribute look-up (a property is
    found at once; `__getattr__` is reached only after that look-up raised)."""
    return property(lambda view: view.__getattr__(name), doc=f"the {name!r} field")


for _name in _CASE_FIELDS:
    setattr(CaseView, _name, _field_property(_name))


class TraceView(_ReadOnly, Mapping[str, Any]):
    """A recorded trace as a user stage reads it: `trace.answer`, `trace.context`,
    `trace.tool_calls`, ... (a field the recording lacks reads as its default: "", [] or None),
    and any field the system returned (`trace.sql`, `trace["sql"]`, `trace.get("sql")`)."""

    __slots__ = ("_trace", "_copies")

    def __init__(self, trace: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_trace", trace)
        object.__setattr__(self, "_copies", {})

    def __getitem__(self, name: str) -> Any:
        copies = self._copies
        if name not in copies:
            trace = self._trace
            if name in trace:
                copies[name] = own_copy(trace[name])
            elif name in TRACE_DEFAULTS:
                copies[name] = own_copy(TRACE_DEFAULTS[name])
            else:
                raise KeyError(name)
        return copies[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._trace)

    def __len__(self) -> int:
        return len(self._trace)

    def __contains__(self, name: object) -> bool:
        return name in self._trace

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            fields = ", ".join(self._trace)
            raise AttributeError(
                f"the trace has no field {name!r} (its fields: {fields}); trace.get({name!r}) "
                "reads an optional one"
            ) from None

    def __repr__(self) -> str:
        return f"TraceView(fields: {', '.join(self._trace)})"


for _name in TRACE_DEFAULTS:
    setattr(TraceView, _name, property(lambda view, name=_name: view[name], doc=f"{_name!r}"))
