"""Code fingerprints: the system's own source, hashed into the key so a code change stales replay.

By default a suite's code is the module holding its system and every module of the project it
imports, transitively (read from the syntax trees, `code_imports`); a suite names its code itself
with `"code": [...]`: module names, `.py` files or folders of them. Each module becomes a key
field `code.<module>` = hash of its normalised source, its AST as text: comments and formatting
never stale anything, while a docstring (a tool's description), a string, a constant or any
statement does. The source is read and parsed, never imported; each file once per run.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import CaseFileError
from ..core.files import MB, RefusedFile, read_bounded
from ..core.hashing import HASH_CHARS
from .code_imports import (
    ImportStatement,
    ModuleFinder,
    import_statements,
    imported_names,
    parent_names,
)

CODE_PREFIX = "code."

# The most modules the default "code" may hold: past it, the system imports (much of) a large
# project and the suite should say which modules its behaviour depends on.
DEFAULT_CODE_BOUND = 500

# The largest source file a fingerprint reads: real modules are at most a few MB (the largest
# here, generated data, is 1.6 MB), and parsing takes tens of times a file's size in memory.
CODE_FILE_CAP = 10 * MB

_LISTED_HINT = 'fix the file or leave it out of "code"'


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


def parse_source(path: Path, hint: str = _LISTED_HINT) -> ast.Module:
    """A Python file's syntax tree; CaseFileError naming the file, ending with `hint`, when it
    cannot be read or parsed, is not a regular file (a FIFO would block the run, a device
    never ends) or is over CODE_FILE_CAP."""
    try:
        source = read_bounded(path, CODE_FILE_CAP)
        return ast.parse(source, filename=str(path))
    except RefusedFile as exc:
        what = " for a source file" if exc.too_big else ", not a regular file"
        raise CaseFileError(
            f'"code": {path} {exc.reason}{what}: nothing was read from it; {hint}'
        ) from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise CaseFileError(
            f'"code": cannot read {path} as Python ({type(exc).__name__}: {exc}); {hint}'
        ) from None


def tree_hash(tree: ast.Module) -> str:
    """Hash of a syntax tree (no line numbers, no comments), the same on every Python."""
    out: list[str] = []
    _portable(tree, out)
    return hashlib.sha256("".join(out).encode()).hexdigest()[:HASH_CHARS]


def source_hash(path: Path) -> str:
    """Hash of a Python file's AST (no line numbers, no comments), the same on every Python;
    CaseFileError if unparsable."""
    return tree_hash(parse_source(path))


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
    """Per-session cache: each file is parsed and hashed once, each module name resolved once and
    each system's import closure computed once, however many suites name them."""

    def __init__(self, rootdir: Path, bound: int = DEFAULT_CODE_BOUND) -> None:
        self.rootdir = rootdir
        self.bound = bound
        self._parsed: dict[Path, tuple[str, tuple[ImportStatement, ...]]] = {}
        self._finder = ModuleFinder(rootdir)
        self._closures: dict[str, list[tuple[str, Path]]] = {}

    def key_fields(
        self, entries: Iterable[str], paths: dict[str, str] | None = None
    ) -> dict[str, str]:
        """`code.<module>` -> hash of each module's source, for a suite's `"code"` entries;
        `paths`, when given, receives each field's file, relative to the rootdir (the field's
        label)."""
        modules = [
            module for entry in entries for module in resolve_code_entry(entry, self.rootdir)
        ]
        return self._fields(modules, paths)

    def default_key_fields(
        self, system_spec: str, paths: dict[str, str] | None = None
    ) -> dict[str, str]:
        """The key fields of a suite without `"code"`: the system's module and every module of
        the project it imports. CaseFileError past the bound."""
        module = default_code(system_spec)[0]
        return self._bounded_fields(module, self.import_closure(module), paths)

    def fixture_key_fields(
        self, module: str, path: Path, paths: dict[str, str] | None = None
    ) -> dict[str, str]:
        """The default key fields of a system a pytest fixture builds: the file defining the
        fixture (module `module`: a conftest.py is no importable name) and every module of the
        project it imports, found without calling the fixture."""
        modules = self._closure(str(path), [(module, path)])
        return self._bounded_fields(module, modules, paths)

    def _bounded_fields(
        self, module: str, modules: list[tuple[str, Path]], paths: dict[str, str] | None
    ) -> dict[str, str]:
        if len(modules) > self.bound:
            top = module.partition(".")[0]
            raise CaseFileError(
                f'the default "code" (the system\'s module {module!r} and every module of the '
                f"project it imports) holds {len(modules)} modules, more than {self.bound}: list "
                f'in "code" the modules the system\'s answers depend on (e.g. "code": '
                f'[{json.dumps(top)}]), or set "code": [] to key no code'
            )
        return self._fields(modules, paths)

    def in_project(self, module: str) -> bool:
        """Whether `module`'s top-level package is the project's (under the rootdir, not in an
        environment folder there): found without importing it."""
        return self._finder.find(module.partition(".")[0]) is not None

    def import_closure(self, module: str) -> list[tuple[str, Path]]:
        """Module `module` (every module of it, if a package folder), the packages holding it and
        every module of the project they import, transitively: (module name, file), by name."""
        known = self._closures.get(module)
        if known is not None:
            return known
        return self._closure(module, resolve_code_entry(module, self.rootdir))

    def _closure(self, cache_key: str, start: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
        known = self._closures.get(cache_key)
        if known is not None:
            return known
        found: dict[str, Path] = {}
        imported_by: dict[str, str] = {}
        queue = deque(start)
        while queue:
            name, path = queue.popleft()
            if name in found:
                continue
            found[name] = path
            importer = imported_by.get(name)
            hint = (
                f'it is imported by {importer!r} (the default "code" follows the system\'s '
                'imports): fix the file, or list the modules to key in "code"'
                if importer
                else _LISTED_HINT
            )
            _, statements = self._read(path, hint)
            is_package = path.name == "__init__.py"
            for candidate in (
                *parent_names(name),
                *imported_names(statements, name, is_package),
            ):
                if candidate in found or candidate in imported_by:
                    continue
                file = self._finder.find(candidate)
                if file is not None:
                    imported_by[candidate] = name
                    queue.append((candidate, file))
        closure = sorted(found.items())
        self._closures[cache_key] = closure
        return closure

    def _read(
        self, path: Path, hint: str = _LISTED_HINT
    ) -> tuple[str, tuple[ImportStatement, ...]]:
        """A file's hash and import statements, from one parse per run."""
        known = self._parsed.get(path)
        if known is None:
            tree = parse_source(path, hint)
            known = self._parsed[path] = (tree_hash(tree), import_statements(tree))
        return known

    def _fields(
        self, modules: Iterable[tuple[str, Path]], paths: dict[str, str] | None
    ) -> dict[str, str]:
        fields: dict[str, str] = {}
        for module, path in modules:
            fields[CODE_PREFIX + module] = self._read(path)[0]
            if paths is not None:
                paths[CODE_PREFIX + module] = _relative_to(path, self.rootdir).as_posix()
        return fields


def default_code(system_spec: str) -> list[str]:
    """The module that holds the suite's system: where its default `"code"` starts."""
    return [system_spec.partition(":")[0]]


# The verdict key field of a suite's own metric from an installed package (deepeval's own
# metrics): its distribution and release, in place of the hundreds of modules of its source.
METRIC_PACKAGE = "metric.package"


def installed_package(module: str) -> str | None:
    """`dist==version` of the installed distribution that holds `module`'s top-level package,
    found without importing it; None for a module no distribution lists (its source is keyed
    instead). Ask only for a module that is not the project's (`CodeFingerprints.in_project`)."""
    import importlib.metadata  # only for a suite's own metrics: not on every run's import path

    top = module.partition(".")[0]
    names = importlib.metadata.packages_distributions().get(top) or []
    if not names:
        return None
    try:
        return f"{names[0]}=={importlib.metadata.version(names[0])}"
    except importlib.metadata.PackageNotFoundError:
        return None
