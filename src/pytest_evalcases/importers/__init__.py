"""Importers: a local file in a benchmark's published format, or in another eval tool's own
format (DeepEval, promptfoo, inspect-ai, ragas), becomes a suite; a human-labelled set
(TruthfulQA, HaluEval general, a team's own labels) becomes a calibration suite.

One module a format (hotpotqa, musique, twowiki, locomo, zep; deepeval, promptfoo, inspect_ai,
ragas; truthfulqa, halueval, labelled); each has `FORMAT`, `DESCRIPTION` and
`parse(path, records) -> Parsed`, which checks every record (a problem is one
BenchmarkFormatError naming the record and the field), and may have `read(path) -> records`
(CSV, YAML; default: JSON or JSON Lines) and `OPTIONS` (the format's own options, e.g.
promptfoo's `input_var`); a format that is a folder (zep) has `load(path) -> (records, sha256)`
instead. A labelled set's Parsed says `"kind": "calibration"` in its suite fields.
`import_suite` then samples, builds the suite, its data files and any stage module, and writes
them all or nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from . import (
    deepeval,
    halueval,
    hotpotqa,
    inspect_ai,
    labelled,
    locomo,
    musique,
    promptfoo,
    ragas,
    truthfulqa,
    twowiki,
    zep,
)
from .base import (
    BenchmarkFormatError,
    Parsed,
    TextFiles,
    Unit,
    read_file,
    read_records,
)
from .checks import (
    check_calibration_suite,
    check_options,
    check_suite,
    check_unique_ids,
    read_ids,
    read_ids_file,
)
from .options import ImportOptions
from .peer_files import recorded_count
from .sampling import (
    SAMPLING,
    STRATIFIED,
    check_stratum_field,
    named_cases,
    sample,
    stratified_sample,
)

EXCLUSIONS_FILE = "exclusions.json"
EXCLUSION_TOTAL = "without gold exclusions"
FORMATS: dict[str, ModuleType] = {
    module.FORMAT: module
    for module in (
        hotpotqa,
        musique,
        twowiki,
        locomo,
        zep,
        deepeval,
        promptfoo,
        inspect_ai,
        ragas,
        truthfulqa,
        halueval,
        labelled,
    )
}
# `--stratify label` keeps each label's share: a calibration case's label is its `expect`.
STRATUM_FIELDS = {"label": "expect"}
# A labelled set's suite judges each item once: a deterministic judge needs no more, and an LLM
# judge over hundreds of items costs a call each (raise the suite's "repeats" to measure spread).
LABELLED_REPEATS = 1

__all__ = ["FORMATS", "BenchmarkFormatError", "ImportOptions", "import_suite", "build_suite"]


def import_suite(options: ImportOptions) -> tuple[dict[str, Any], list[Path]]:
    """Read, check, sample, write. Returns the suite and the files written; raises
    BenchmarkFormatError (nothing written) for a bad file or bad options."""
    module = FORMATS[options.format]
    check_options(options, FORMATS)
    if hasattr(module, "load"):  # a folder (Zep's layout): its files read, and one digest
        records, file_sha256 = module.load(options.file)
    else:
        raw = read_file(options.file, what="the benchmark file")
        records = getattr(module, "read", read_records)(options.file)
        file_sha256 = hashlib.sha256(raw).hexdigest()
    if not records:
        raise BenchmarkFormatError(
            f"{options.file}: holds no records; check that it is the {options.format} file "
            "you meant"
        )
    own: dict[str, Any] = {}
    if options.max_sessions is not None:
        own["max_sessions"] = options.max_sessions
    if options.input_var is not None:
        own["input_var"] = options.input_var
    for name in ("stage", "columns", "label_threshold"):
        if getattr(options, name) is not None:
            own[name] = getattr(options, name)
    parsed = module.parse(options.file, records, **own)
    check_unique_ids(options.file, parsed.units)
    if options.ids is not None:
        picked = named_cases(parsed.units, read_ids(options.ids), str(options.ids))
    elif options.stratify is not None:
        field = STRATUM_FIELDS.get(options.stratify, options.stratify)
        check_stratum_field(parsed.units, field, str(options.file))
        picked = stratified_sample(parsed.units, options.limit, options.seed, field)
    else:
        picked = sample(parsed.units, options.limit, options.seed)
    excluded = None
    if options.exclude_ids is not None:
        named = named_cases(parsed.units, read_ids(options.exclude_ids), str(options.exclude_ids))
        excluded = [unit.case["id"] for unit in named]
    if is_calibration(parsed):
        suite, files = build_calibration_suite(parsed, picked, options, file_sha256), {}
    else:
        suite, files = build_suite(parsed, picked, options, file_sha256, excluded)
    if options.download:  # --download: where the file came from, beside its own hash
        suite["source"]["download"] = options.download
    if is_calibration(parsed):
        check_calibration_suite(options.file, suite)
    else:
        check_suite(options.file, suite)
    written = _write_all({options.output: suite, **files}, options.force)
    return suite, written


def build_suite(
    parsed: Parsed,
    chosen: list[Unit],
    options: ImportOptions,
    file_sha256: str,
    excluded: list[str] | None = None,
) -> tuple[dict[str, Any], dict[Path, Any]]:
    """The suite document and its data files (path -> JSON content) for the sampled cases."""
    name = options.name or options.output.stem
    files: dict[Path, Any] = {}
    suite: dict[str, Any] = {"name": name}
    if options.system:
        suite["system"] = options.system
    corpus: dict[tuple[str, str], dict[str, str]] = {}
    for unit in chosen:
        for paragraph in unit.paragraphs:
            corpus.setdefault((paragraph["title"], paragraph["text"]), paragraph)
    if corpus:
        path = options.data_dir / "paragraphs.json"
        files[path] = list(corpus.values())
        suite["inputs"] = [_relative(path, options.root)]
    users_used = list(dict.fromkeys(u.case["user"] for u in chosen if u.case.get("user")))
    if users_used:
        suite["users"] = []
        for user_id in users_used:
            entry: dict[str, Any] = {"id": user_id}
            for field, content in parsed.users[user_id].items():
                if isinstance(content, TextFiles):  # files as they are, listed by the user
                    paths = [options.data_dir / name for name in content]
                    files.update(zip(paths, map(_Text, content.values()), strict=True))
                    entry[field] = [_relative(path, options.root) for path in paths]
                    continue
                path = options.data_dir / user_id / f"{field}.json"
                files[path] = content
                entry[field] = _relative(path, options.root)
            suite["users"].append(entry)
    if parsed.documents:
        paths = [options.data_dir / name for name in parsed.documents]
        files.update(zip(paths, map(_Text, parsed.documents.values()), strict=True))
        suite["documents"] = {"files": [_relative(path, options.root) for path in paths]}
    suite.update(stages=parsed.stages, report_only=parsed.report_only, k=parsed.k)
    suite.update(parsed.suite_fields)
    modules = _stage_modules(parsed, options, name)
    if modules:
        suite["stage_modules"] = list(modules)
        files.update(modules.values())
    # A total may name only categories and ids the sample holds (a run refuses others).
    totals = _totals_within(parsed.totals, chosen)
    if excluded is not None:  # the excluded cases stay in the suite: only this total skips them
        kept = {unit.case["id"] for unit in chosen}
        excluded = [case_id for case_id in excluded if case_id in kept]
        path = options.data_dir / EXCLUSIONS_FILE
        files[path] = excluded
        base = parsed.exclusion_total or {"name": EXCLUSION_TOTAL, "exclude": {}}
        ids = {"ids": _relative(path, options.root)}
        totals += _totals_within([{**base, "exclude": {**base["exclude"], **ids}}], chosen)
    if totals:
        suite["totals"] = totals
    suite["source"] = _source(parsed, chosen, options, file_sha256, excluded)
    suite["cases"] = [unit.case for unit in chosen]
    return suite, files


def is_calibration(parsed: Parsed) -> bool:
    """A human-labelled set: its cases are judge test cases, its suite a calibration suite."""
    return parsed.suite_fields.get("kind") == "calibration"


def build_calibration_suite(
    parsed: Parsed, chosen: list[Unit], options: ImportOptions, file_sha256: str
) -> dict[str, Any]:
    """A calibration suite of the sampled judge test cases (no system, no data files)."""
    fields = {key: value for key, value in parsed.suite_fields.items() if key != "kind"}
    return {
        "name": options.name or options.output.stem,
        "kind": "calibration",
        "repeats": LABELLED_REPEATS,
        **fields,
        "source": _source(parsed, chosen, options, file_sha256, None),
        "cases": [unit.case for unit in chosen],
    }


def _source(
    parsed: Parsed,
    chosen: list[Unit],
    options: ImportOptions,
    file_sha256: str,
    excluded: list[str] | None,
) -> dict[str, Any]:
    """The suite's `source`: the file, its sha256 and how the cases were sampled from it."""
    source = {
        "format": options.format,
        "file": options.file.name,
        "sha256": file_sha256,
        "records": len(parsed.units),
        "cases": len(chosen),
        "limit": options.limit,
        "seed": options.seed,
        "sampling": _sampling(options),
        **parsed.source_notes,
    }
    if options.stage is not None:
        source["stage"] = options.stage
    if options.label_threshold is not None:
        source["label_threshold"] = options.label_threshold
    unmapped = [item for unit in chosen for item in unit.unmapped]
    if unmapped:
        source["unmapped"] = unmapped
    recorded = recorded_count([unit.case for unit in chosen])
    if recorded:
        source["recorded_outputs"] = recorded
    if options.exclude_ids is not None:
        source["exclusions"] = {
            "file": options.exclude_ids.name,
            "sha256": hashlib.sha256(read_ids_file(options.exclude_ids)).hexdigest(),
            "cases": len(excluded or ()),
        }
    if options.ids is not None:
        source["ids"] = {
            "file": options.ids.name,
            "sha256": hashlib.sha256(read_ids_file(options.ids)).hexdigest(),
        }
    return source


def _totals_within(totals: list[dict[str, Any]], chosen: list[Unit]) -> list[dict[str, Any]]:
    """The benchmark's totals with the categories the sampled cases lack left out."""
    present = {unit.case.get("category") for unit in chosen}
    within = []
    for total in totals:
        exclude = dict(total.get("exclude", {}))
        if "category" in exclude:
            exclude["category"] = [name for name in exclude["category"] if name in present]
        within.append({**total, "exclude": exclude})
    return within


def _stage_modules(
    parsed: Parsed, options: ImportOptions, suite_name: str
) -> dict[str, tuple[Path, str]]:
    """Module name -> (file, source) of each stage module, written next to the suite and
    imported by its dotted path from the rootdir (`cases.hotpot_promptfoo`)."""
    modules = {}
    folder = options.output.parent
    for key, source in parsed.modules.items():
        stem = re.sub(r"\W+", "_", f"{options.output.stem}_{key}").strip("_")
        path = folder / f"{stem}.py"
        parts = Path(_relative(path, options.root)).with_suffix("").parts
        if not all(part.isidentifier() for part in parts):
            raise BenchmarkFormatError(
                f"{path}: the suite's stage module would be imported as "
                f"{'.'.join(parts)!r}, which is not a module name; write the suite into a "
                "folder whose name is a Python identifier (e.g. cases/)"
            )
        text = source(folder.resolve(), _relative(options.output, options.root))
        modules[".".join(parts)] = (path, _Text(text))
    return modules


class _Text(str):
    """A file written as it is (a stage module), not as JSON."""


def _sampling(options: ImportOptions) -> str:
    if options.ids is not None:
        return "exactly the cases the ids file names, in file order"
    if options.limit is None:
        return "all cases, in file order"
    if options.stratify is not None:
        return STRATIFIED.format(field=options.stratify)
    return SAMPLING


def _relative(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()


def _write_all(documents: dict[Path, Any], force: bool) -> list[Path]:
    """Every file as `<name>.tmp.<pid>` first, then all renamed: a failure before the renames
    leaves nothing behind."""
    staged: list[tuple[Path, Path]] = []
    try:
        for path, content in documents.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
            text = (
                content
                if isinstance(content, _Text)
                else json.dumps(content, indent=1, ensure_ascii=False) + "\n"
            )
            tmp.write_text(text, encoding="utf-8")
            staged.append((tmp, path))
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
    return [path for _, path in staged]
