"""DeepEval: a dataset of goldens as `EvaluationDataset.save_as` writes it (JSON, JSONL or CSV)

    {"input", "expected_output", "context": [...], "retrieval_context": [...],
     "expected_tools": [{"name", "input_parameters": {...}}, ...], "additional_metadata": {...},
     "actual_output", "tools_called", "name", "comments", "source_file", ...}

In a CSV file `context` and `retrieval_context` are texts joined by `|`, `expected_tools` a JSON
list (or names joined by `;`) and `additional_metadata` a JSON object, as DeepEval writes them.

Each golden is a case: `expected_output` -> `reference`, `context` (DeepEval's ideal context)
-> `expected_context`, `expected_tools` -> `expected_tools` (with `input_parameters` as `args`),
`additional_metadata` -> `metadata`, `name` -> the case id (else `golden-001`, ...). What the
golden recorded of a run (`actual_output`, `retrieval_context`, `tools_called`) is kept in
`metadata.recorded`, never given to the system; the rest (`comments`, `source_file`, ...) in
`metadata.deepeval`, and so are the expected tools as given when one expects more than the
tools stage checks (an `output`). A multi-turn golden (`scenario`, `turns`) is refused: import
single-turn goldens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.names import unsafe_id_reason
from .base import Parsed, RecordReader, Unit
from .peer_files import (
    TableRow,
    json_cell,
    keep_recorded,
    numbered_id,
    read_table_or_json,
    row_place,
    text_list,
    without_nulls,
)

FORMAT = "deepeval"
DESCRIPTION = "DeepEval: a dataset of goldens (JSON, JSONL or CSV, as save_as writes it)"
NEXT_STEP = "; fix it, or save the dataset again with DeepEval's dataset.save_as()"
CONTEXT_DELIMITER = "|"  # DeepEval's DELIMITER for context cells
TOOLS_DELIMITER = ";"  # and its TOOLS_DELIMITER for tool names
MAPPED = frozenset(
    {"input", "expected_output", "context", "expected_tools", "additional_metadata", "name"}
)
RECORDED_FIELDS = ("actual_output", "retrieval_context", "tools_called")

read = read_table_or_json


def parse(path: Path, records: list[Any]) -> Parsed:
    units = [_unit(path, index, record, len(records)) for index, record in enumerate(records)]
    with_reference = any("reference" in unit.case for unit in units)
    stages = ["answer_accuracy"] if with_reference else ["answer_relevancy"]
    if any("expected_tools" in unit.case for unit in units):
        stages.append("tools")
    report_only = ["token_f1"] if with_reference else []
    if any("expected_context" in unit.case for unit in units):
        report_only.append("context_coverage")
    return Parsed(units, stages=stages, report_only=report_only)


def _unit(path: Path, index: int, record: Any, count: int) -> Unit:
    record = without_nulls(record)
    reader = RecordReader(path, index, record, None, row_place(record, index), NEXT_STEP)
    if reader.record.get("scenario"):
        raise reader.error(
            "scenario",
            "makes this a multi-turn golden (ConversationalGolden), which is not imported; "
            "import a dataset of single-turn goldens",
        )
    name = reader.text("name", required=False)
    case: dict[str, Any] = {
        "id": name if name and not unsafe_id_reason(name) else numbered_id("golden", index, count),
        "input": reader.text("input"),
    }
    reference = reader.text("expected_output", required=False)
    if reference is not None and reference.strip():
        case["reference"] = reference
    context = text_list(reader, "context", CONTEXT_DELIMITER)
    if context:
        case["expected_context"] = context
    tools, unchecked = _expected_tools(reader)
    if tools:
        case["expected_tools"] = tools
    metadata = json_cell(reader, "additional_metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise reader.error(
            "additional_metadata", f"is {type(metadata).__name__}, expected an object"
        )
    if metadata:
        case["metadata"] = dict(metadata)
    keep_recorded(
        case,
        {
            "actual_output": reader.record.get("actual_output"),
            "retrieval_context": text_list(reader, "retrieval_context", CONTEXT_DELIMITER),
            "tools_called": json_cell(reader, "tools_called"),
        },
    )
    others = {
        key: value
        for key, value in reader.record.items()
        if key not in MAPPED and key not in RECORDED_FIELDS and value not in (None, "", [], {})
    }
    if name and name != case["id"]:
        others["name"] = name  # not a safe id: kept, the case numbered instead
    if unchecked:  # what the tools stage does not check (a tool's expected output): kept
        others["expected_tools"] = unchecked
    if others:
        case.setdefault("metadata", {})["deepeval"] = others
    return Unit(case)


def _expected_tools(reader: RecordReader) -> tuple[list[Any] | None, list[Any] | None]:
    """DeepEval ToolCalls as tool expectations: the name, and `input_parameters` (or its alias
    `inputParameters`) as the arguments the call must have; and the ToolCalls as given when one
    expects more than the tools stage checks (an `output`, a `description`), else None."""
    value = reader.record.get("expected_tools")
    in_cell = isinstance(reader.record, TableRow)
    if in_cell and isinstance(value, str) and not value.lstrip().startswith("["):  # names
        return [name.strip() for name in value.split(TOOLS_DELIMITER) if name.strip()], None
    value = json_cell(reader, "expected_tools")
    if value is None:
        return None, None
    if not isinstance(value, list):
        raise reader.error("expected_tools", f"is {type(value).__name__}, expected a list")
    tools: list[Any] = []
    for number, tool in enumerate(value):
        where = f"expected_tools[{number}]"
        if isinstance(tool, str):
            tools.append(tool)
            continue
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise reader.error(where, 'must be a tool name or an object with a "name"')
        args = tool.get("input_parameters", tool.get("inputParameters"))
        if args is not None and not isinstance(args, dict):
            raise reader.error(f"{where}.input_parameters", "must be an object")
        tools.append({"name": tool["name"], "args": args} if args else tool["name"])
    checked = {"name", "type", "input_parameters", "inputParameters"}
    unchecked = [t for t in value if isinstance(t, dict) and set(t) - checked]
    return tools, value if unchecked else None
