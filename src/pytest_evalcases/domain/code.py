"""Code fingerprints: the system's own source, hashed into the key so a code change stales replay.

A suite names its code with `"code": [...]`: module names, `.py` files or folders of them. Each
module becomes a key field `code.<module>` = hash of its normalised source, its AST as text:
comments and formatting never stale anything, while a docstring (a tool's description), a string,
a constant or any statement does. The source is read and parsed, never imported.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import CaseFileError
from ..core.hashing import HASH_CHARS

CODE_PREFIX = "code."


_encode_string = json.JSONEncoder(ensure_ascii=True).encode


def _portable(node: Any, out: list[str]) -> None:
    """Append a text form of an AST to `out` that every Python >= 3.11 builds alike from the
    same source, unlike `ast.dump`: fields that are None or empty are left out (3.12 added
    `type_params` to every function and class; 3.13's dump omits empty fields), so are the empty
    string parts 3.12 puts in some f-strings, and strings are written as JSON, not as `repr`
    (which follows the interpreter's Unicode tables). Faster than `ast.dump`, too."""
    if isinstance(node, ast.AST):
        out.append(type(node).__name__ + "(")
        joined = isinstance(node, ast.JoinedStr)
        for name in node._fields:
            value = getattr(node, name, None)
            if value is None or (isinstance(value, list) and not value):
                continue
            if joined and name == "values":
                value = [v for v in value if not (isinstance(v, ast.Constant) and v.value == "")]
            out.append(name + "=")
            _portable(value, out)
            out.append(",")
        out.append(")")
    elif isinstance(node, list):
        out.append("[")
        for value in node:
            _portable(value, out)
            out.append(",")
        out.append("]")
    elif isinstance(node, str):
        out.append(_encode_string(node))
    else:  # numbers, bytes, True/False, Ellipsis
        out.append(type(node).__name__ + ":" + repr(node))


def source_hash(path: Path) -> str:
    """Hash of a Python file's AST (no line numbers, no comments), the same on every Python;
    CaseFileError if unparsable."""
    try:
        source = path.read_bytes()
        tree = ast.parse(source, filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        raise CaseFileError(
            f'"code": cannot read {path} as Python ({type(exc).__name__}: {exc}); fix the file '
            'or leave it out of "code"'
        ) from None
    out: list[str] = []
    _portable(tree, out)
    return hashlib.sha256("".join(out).encode()).hexdigest()[:HASH_CHARS]


def _dotted(relative: Path) -> str:
    """`pkg/mod.py` -> `pkg.mod`, `pkg/__init__.py` -> `pkg`, the rootdir itself -> ``."""
    parts = list(relative.with_suffix("").parts) if relative.parts else []
    if parts and parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _package_modules(folder: Path, name: str) -> list[tuple[str, Path]]:
    """Every `.py` file under `folder` (no hidden or cache folders), as (module name, path)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__pycache__")))
        for filename in sorted(filenames):
            if filename.endswith(".py"):
                path = Path(dirpath, filename)
                inner = _dotted(path.relative_to(folder))
                if inner == "__init__":
                    module = name or inner
                else:
                    module = f"{name}.{inner}" if name else inner
                found.append((module, path))
    return found


def _locate_module(name: str, search: Iterable[str]) -> Path | None:
    """The file or package folder of a module name, found on the search path without importing
    it (importing would run the user's code just to hash it)."""
    loaded = sys.modules.get(name)
    origin = getattr(loaded, "__file__", None)
    if origin:
        path = Path(origin)
        return path.parent if path.name == "__init__.py" else path
    relative = Path(*name.split("."))
    for entry in search:
        base = Path(entry or ".")
        if (base / relative / "__init__.py").is_file():
            return base / relative
        if base.joinpath(relative).with_suffix(".py").is_file():
            return base.joinpath(relative).with_suffix(".py")
        if (base / relative).is_dir():  # a namespace package
            return base / relative
    return None


def resolve_code_entry(entry: str, rootdir: Path) -> list[tuple[str, Path]]:
    """The modules one `"code"` entry names, as (module name, file path); CaseFileError when it
    names nothing. Paths (with `/` or ending in `.py`) are relative to the rootdir."""
    looks_like_path = "/" in entry or "\\" in entry or entry.endswith(".py")
    if looks_like_path:
        path = (rootdir / entry).resolve()
        if path.is_file() and path.suffix == ".py":
            return [(_dotted(_relative_to(path, rootdir)), path)]
        if path.is_dir():
            modules = _package_modules(path, _dotted(_relative_to(path, rootdir)))
            if modules:
                return modules
            raise CaseFileError(f'"code": folder {entry!r} holds no .py file')
        raise CaseFileError(
            f'"code": {entry!r} is not a .py file or a folder under the rootdir {rootdir}'
        )
    if not all(part.isidentifier() for part in entry.split(".")):
        raise CaseFileError(
            f'"code": {entry!r} is neither a module name (e.g. "myapp.tools") nor a path '
            '(e.g. "myapp/prompts/")'
        )
    location = _locate_module(entry, [str(rootdir), *sys.path])
    if location is None:
        raise CaseFileError(
            f'"code": module {entry!r} was not found under the rootdir {rootdir} or on sys.path; '
            "name a module of your project, or a path relative to the rootdir"
        )
    if location.is_dir():
        modules = _package_modules(location, entry)
        if modules:
            return modules
        raise CaseFileError(f'"code": module {entry!r} is a folder that holds no .py file')
    return [(entry, location)]


def _relative_to(path: Path, rootdir: Path) -> Path:
    try:
        return path.relative_to(rootdir.resolve())
    except ValueError:
        return Path(path.name)


class CodeFingerprints:
    """Per-session cache: each file is parsed and hashed once, however many suites name it."""

    def __init__(self, rootdir: Path) -> None:
        self.rootdir = rootdir
        self._hashes: dict[Path, str] = {}

    def key_fields(
        self, entries: Iterable[str], paths: dict[str, str] | None = None
    ) -> dict[str, str]:
        """`code.<module>` -> hash of each module's source; `paths`, when given, receives each
        field's file, relative to the rootdir (the field's label)."""
        fields: dict[str, str] = {}
        for entry in entries:
            for module, path in resolve_code_entry(entry, self.rootdir):
                digest = self._hashes.get(path)
                if digest is None:
                    digest = self._hashes[path] = source_hash(path)
                fields[CODE_PREFIX + module] = digest
                if paths is not None:
                    paths[CODE_PREFIX + module] = _relative_to(path, self.rootdir).as_posix()
        return fields


def default_code(system_spec: str) -> list[str]:
    """Without `"code"`, the module that holds the suite's system."""
    return [system_spec.partition(":")[0]]
