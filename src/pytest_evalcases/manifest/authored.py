"""The authored input manifest (`--eval-input-manifest FILE`, ini `eval_input_manifest`): a file
a team writes before a run that fixes its seed, split, language, prompt versions and model
names. The run refuses to start when what it would run differs, hands the values to the system
(`case.run_config`) and records them. Pure, bar `load_input_manifest`, which reads the file.

Not the run manifest (`manifest.json`, a lock a run writes, `--eval-manifest`): that one is
written by a run and checked later; this one is written by a person and obeyed.

Where a fixed value is compared: with the system's `fingerprint()` entry of the same name (the
run manifest's readable value, compared as the lock compares it), and `models.judge` with the
judge each suite runs with. A name the fingerprint does not declare is not a difference: the
system gets it in `case.run_config`, and it is a key field `run_config.<name>` of the suite.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.hashing import content_hash
from ..store.files import REPORT_FILE_CAP, RefusedFile, read_bounded
from .config import readable
from .lock import ManifestError, refusal_text, shown_value

INPUT_MANIFEST_FORMAT = "pytest-evalcases/input-manifest"
INPUT_MANIFEST_VERSION = 1
OPTION = "--eval-input-manifest"
RUN_CONFIG_PREFIX = "run_config."
_TOP_FIELDS = ("format", "version", "name", "seed", "language", "prompt_versions", "models")
_SPLIT_FIELDS = ("suites", "categories", "ids")
JUDGE = "judge"  # models.judge: compared with the judge a suite runs with, not a fingerprint
_LISTED = 5  # split names shown per line before "and N more"


@dataclass(frozen=True)
class InputManifest:
    """An authored manifest, checked: what it fixes and which cases it admits."""

    file: str  # as the user gave it
    hash: str  # of its content, so a record names the exact file
    name: str | None = None
    seed: Any = None
    language: str | None = None
    prompt_versions: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    split: dict[str, list[str]] = field(default_factory=dict)

    def fixed(self) -> dict[str, tuple[str, Any]]:
        """fingerprint name -> (the manifest's field, its value), for every fixed value but the
        judge: `seed`, `language`, each prompt version and each model name."""
        found: dict[str, tuple[str, Any]] = {}
        if self.seed is not None:
            found["seed"] = ("seed", self.seed)
        if self.language is not None:
            found["language"] = ("language", self.language)
        for name, value in self.prompt_versions.items():
            found[name] = (f"prompt_versions.{name}", value)
        for name, value in self.models.items():
            if name != JUDGE:
                found[name] = (f"models.{name}", value)
        return found

    def run_config(self) -> dict[str, Any]:
        """What the system receives as `case.run_config`: the fixed values, as written."""
        view: dict[str, Any] = {}
        if self.name is not None:
            view["name"] = self.name
        if self.seed is not None:
            view["seed"] = self.seed
        if self.language is not None:
            view["language"] = self.language
        if self.prompt_versions:
            view["prompt_versions"] = dict(self.prompt_versions)
        if self.models:
            view["models"] = dict(self.models)
        return view

    def values(self) -> dict[str, Any]:
        """The fixed values and the split, as the run records them (manifest.json `input`)."""
        return {**self.run_config(), **({"split": self.split} if self.split else {})}

    def record(self) -> dict[str, Any]:
        """The run manifest's `input` part (and results.json `run.config.input`)."""
        return {"file": self.file, "hash": self.hash, "values": self.values()}

    def admits(self, suite: str, case_id: str, category: str | None) -> bool:
        """Whether the split runs this case (no split: every case)."""
        split = self.split
        if "suites" in split and suite not in split["suites"]:
            return False
        if "categories" in split and category not in split["categories"]:
            return False
        return "ids" not in split or case_id in split["ids"]

    def applies_to(self, suite: str) -> bool:
        return "suites" not in self.split or suite in self.split["suites"]


def load_input_manifest(path: Path, shown: str) -> InputManifest:
    """The authored manifest at `path` (`shown`: as the user gave it), checked."""
    advice = "fix the file, or run without " + OPTION
    try:
        data = read_bounded(path, REPORT_FILE_CAP)
    except FileNotFoundError:
        raise ManifestError(
            f"{OPTION} {shown}: no such file; write one (see docs/reports.md, "
            '"The authored input manifest"), or run without it'
        ) from None
    except RefusedFile as exc:
        what = "" if exc.too_big else ", not a regular file"
        raise ManifestError(
            f"{OPTION} {shown}: {exc.reason}{what}: nothing was read from it; {advice}"
        ) from None
    except OSError as exc:
        raise ManifestError(f"{OPTION} {shown}: cannot read it ({exc}); {advice}") from None
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f" at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise ManifestError(f"{OPTION} {shown}: not valid JSON{where}; {advice}") from None
    return parse_input_manifest(doc, shown, content_hash(doc))


def parse_input_manifest(doc: Any, shown: str, digest: str = "") -> InputManifest:
    """An authored manifest from its JSON; ManifestError naming the file and the field."""

    def bad(what: str) -> ManifestError:
        return ManifestError(f"{OPTION} {shown}: {what}; fix the file, or run without {OPTION}")

    if not isinstance(doc, dict):
        raise bad("not a JSON object")
    unknown = sorted(set(doc) - set(_TOP_FIELDS) - {"split"})
    if unknown:
        raise bad(
            f"unknown field{'s' * (len(unknown) != 1)} {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(_TOP_FIELDS + ('split',))})"
        )
    if doc.get("format", INPUT_MANIFEST_FORMAT) != INPUT_MANIFEST_FORMAT:
        raise bad(f'"format" is {doc["format"]!r}, not {INPUT_MANIFEST_FORMAT!r}')
    version = doc.get("version", INPUT_MANIFEST_VERSION)
    if not isinstance(version, int) or isinstance(version, bool):
        raise bad(f'"version" must be an integer, got {version!r}')
    if version > INPUT_MANIFEST_VERSION:
        raise ManifestError(
            f"{OPTION} {shown}: version {version} is not one this plugin reads (up to "
            f"{INPUT_MANIFEST_VERSION}); upgrade pytest-evalcases"
        )
    for name in ("name", "language"):
        if name in doc and not (isinstance(doc[name], str) and doc[name]):
            raise bad(f'"{name}" must be a non-empty string, got {doc[name]!r}')
    seed = doc.get("seed")
    if "seed" in doc and (not isinstance(seed, int | str) or isinstance(seed, bool)):
        raise bad(f'"seed" must be an integer or a string, got {seed!r}')
    tables: dict[str, dict[str, Any]] = {}
    for name in ("prompt_versions", "models"):
        table = doc.get(name, {})
        if not isinstance(table, dict) or not all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in table.values()
        ):
            raise bad(f'"{name}" must map names to strings or numbers, got {table!r}')
        tables[name] = dict(table)
    clash = sorted(tables["prompt_versions"].keys() & tables["models"].keys())
    clash += [n for n in ("seed", "language") if n in doc and n in tables["models"]]
    clash += [n for n in ("seed", "language") if n in doc and n in tables["prompt_versions"]]
    if clash:
        raise bad(f"{', '.join(map(repr, sorted(set(clash))))} fixed twice (each name once)")
    if JUDGE in tables["prompt_versions"]:
        raise bad('"judge" belongs under "models"')
    return InputManifest(
        file=shown,
        hash=digest or content_hash(doc),
        name=doc.get("name"),
        seed=seed,
        language=doc.get("language"),
        prompt_versions=tables["prompt_versions"],
        models=tables["models"],
        split=_split(doc.get("split", {}), bad),
    )


def _split(split: Any, bad: Any) -> dict[str, list[str]]:
    if not isinstance(split, dict):
        raise bad(f'"split" must be an object with {", ".join(_SPLIT_FIELDS)}, got {split!r}')
    unknown = sorted(set(split) - set(_SPLIT_FIELDS))
    if unknown:
        raise bad(f'"split" has unknown field {unknown[0]!r} (known: {", ".join(_SPLIT_FIELDS)})')
    found: dict[str, list[str]] = {}
    for name in _SPLIT_FIELDS:
        if name not in split:
            continue
        names = split[name]
        if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
            raise bad(f'"split.{name}" must be a non-empty list of strings, got {names!r}')
        found[name] = list(names)
    return found


@dataclass(frozen=True)
class Difference:
    """One place where the run differs from the authored manifest."""

    where: str  # "suite memory" or "split"
    field: str  # the manifest's field: "models.model", "seed", "split.ids"
    fixed: str  # the manifest's value, as shown
    found: str  # the run's value, as shown
    next_step: str

    def line(self) -> str:
        return (
            f"{self.where}: {self.field}: the manifest fixes {self.fixed}, this run has "
            f"{self.found}; {self.next_step}"
        )


def input_differences(
    manifest: InputManifest,
    project: Mapping[str, Any],
    case_names: Mapping[str, tuple[Iterable[str], Iterable[str | None]]],
) -> list[Difference]:
    """Every difference between what the manifest fixes and what this run would run:
    `project` is the run manifest's config (every suite's fingerprint and judge, as the lock
    reads them), `case_names` each suite's case ids and categories (for the split)."""
    found: list[Difference] = []
    suites = project.get("suites") or {}
    for name, entry in suites.items():
        if entry.get("kind") == "calibration" or not manifest.applies_to(name):
            continue
        found += _suite_differences(manifest, name, entry)
    found += _split_differences(manifest, suites, case_names)
    return found


def _suite_differences(
    manifest: InputManifest, suite: str, entry: Mapping[str, Any]
) -> list[Difference]:
    where = f"suite {suite}"
    found: list[Difference] = []
    fingerprint = entry.get("fingerprint") or {}
    for name, (field_name, value) in manifest.fixed().items():
        if name in fingerprint and readable(value) != fingerprint[name]:
            found.append(
                Difference(
                    where,
                    field_name,
                    shown_value(readable(value)),
                    f"{shown_value(fingerprint[name])} (fingerprint().{name} of "
                    f"{entry.get('system')})",
                    f"make the system's fingerprint() return {shown_value(value)} for {name!r} "
                    "(its config or prompt file), or change the manifest if the change is meant",
                )
            )
    if JUDGE in manifest.models and manifest.models[JUDGE] != entry.get("judge"):
        fixed = manifest.models[JUDGE]
        found.append(
            Difference(
                where,
                f"models.{JUDGE}",
                shown_value(fixed),
                f"{shown_value(entry.get('judge'))} (the judge this suite runs with)",
                f"run with --eval-judge {fixed} (or set it as the suite's or ini eval_judge), "
                "or change the manifest",
            )
        )
    return found


def _split_differences(
    manifest: InputManifest,
    suites: Mapping[str, Any],
    case_names: Mapping[str, tuple[Iterable[str], Iterable[str | None]]],
) -> list[Difference]:
    """Names in the split that nothing in the case folders has: a split that silently ran
    less than it names would not be the split."""
    split = manifest.split
    found: list[Difference] = []
    in_scope = [name for name in case_names if manifest.applies_to(name)]
    checks: list[tuple[str, set[str], str]] = [
        ("suites", set(suites), "the suites of the case folders"),
        (
            "categories",
            {c for name in in_scope for c in case_names[name][1] if c is not None},
            "the categories of the split's suites",
        ),
        ("ids", {i for name in in_scope for i in case_names[name][0]}, "the split's suites"),
    ]
    for part, known, among in checks:
        missing = [name for name in split.get(part, ()) if name not in known]
        if missing:
            listed = ", ".join(missing[:_LISTED])
            if len(missing) > _LISTED:
                listed += f" and {len(missing) - _LISTED} more"
            found.append(
                Difference(
                    "split",
                    f"split.{part}",
                    listed,
                    f"none of {'it' if len(missing) == 1 else 'them'} among {among}",
                    "fix the name in the manifest, or add the missing case file or case",
                )
            )
    return found


def input_refusal(shown: str, differences: list[Difference]) -> str:
    """The message of a run that refuses to start: every difference, then what to do."""
    return refusal_text(
        f"{OPTION} {shown}: this run differs from the authored manifest",
        [difference.line() for difference in differences],
        "the manifest is the run's input: bring the system and options in line with it, or edit "
        "the manifest (and commit it) if the change is meant",
    )


def run_config_key_fields(
    manifest: InputManifest, fingerprint: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, Any]]:
    """The fixed values a suite's fingerprint does not declare, as key fields
    `run_config.<name>` and their values (for labels): the system gets them in
    `case.run_config`, so a changed seed stales the recordings made with the old one. A value
    the fingerprint declares is keyed already (and checked equal)."""
    values = {
        f"{RUN_CONFIG_PREFIX}{name}": value
        for name, (_field, value) in manifest.fixed().items()
        if name not in fingerprint
    }
    return {name: content_hash(value) for name, value in values.items()}, values
