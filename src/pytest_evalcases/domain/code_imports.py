"""Which modules of the project a module imports: read from its syntax tree, resolved to `.py`
files under the rootdir, nothing imported.

`import_statements` reads every `import` and `from ... import` of a module (at the top, inside
functions, classes, `if`, `try`); `imported_names` turns them into absolute module names (a
relative import is resolved against the importing module's package). `ModuleFinder` resolves a
name to the project file Python would load for it, or None: the standard library, installed
packages (site-packages) and anything outside the rootdir are never project modules. Each name
is resolved once per run.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

# One import statement, as read: (level, module, names). `import a.b` is (0, "a.b", ()); `from
# ..x import y, z` is (2, "x", ("y", "z")); `from . import y` is (1, "", ("y",)).
ImportStatement = tuple[int, str, tuple[str, ...]]

# The statement fields that hold more statements (if, for, while, try, with, def, class, match).
_BLOCKS = ("body", "handlers", "orelse", "finalbody", "cases")  # in source order

# Folders whose modules are installed, never the project's, wherever they are (a .venv or a
# conda environment inside the project).
_INSTALLED_FOLDERS = frozenset({"site-packages", "dist-packages"})


def import_statements(tree: ast.Module) -> tuple[ImportStatement, ...]:
    """Every import statement of a module, in source order, whatever block it sits in. Only
    statements are visited (an import is always one), not expressions."""
    found: list[ImportStatement] = []
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            found.extend((0, alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names if alias.name != "*")
            found.append((node.level, node.module or "", names))
        else:
            inner = [
                child
                for field in _BLOCKS
                if isinstance(block := getattr(node, field, None), list)
                for child in block
            ]
            stack.extend(reversed(inner))
    return tuple(found)


def imported_names(
    statements: Iterable[ImportStatement], module: str, is_package: bool
) -> Iterator[str]:
    """The absolute names of the modules `statements` may load, when read in `module` (a package's
    `__init__` when `is_package`). `from a import b` yields `a` and `a.b`: `b` may be a submodule
    or a name defined in `a`; the finder drops names that are no module. A relative import that
    goes above the top-level package is left out (Python refuses it too)."""
    package = module if is_package else module.rpartition(".")[0]
    for level, name, names in statements:
        if level:
            parts = package.split(".") if package else []
            keep = len(parts) - (level - 1)
            if keep <= 0:
                continue
            base = ".".join(parts[:keep] + ([name] if name else []))
        else:
            base = name
        yield base
        for attribute in names:
            yield f"{base}.{attribute}"


def parent_names(module: str) -> Iterator[str]:
    """`a.b.c` -> `a`, `a.b`: the packages Python runs before the module itself."""
    parts = module.split(".")
    for end in range(1, len(parts)):
        yield ".".join(parts[:end])


class ModuleFinder:
    """Resolves module names to the project's `.py` files, as Python's path finder would find
    them (the rootdir first, then sys.path), each name once per run. A module already imported
    is where Python loaded it from."""

    def __init__(self, rootdir: Path) -> None:
        self._root = Path(os.path.realpath(rootdir))
        self._stdlib: Path | None = None  # the standard library's folder, once needed
        # name -> (the module's file or None for a namespace package, the folders its
        # submodules are searched in), or None when the name is no module of the project.
        self._found: dict[str, tuple[Path | None, tuple[Path, ...]] | None] = {}

    def find(self, name: str) -> Path | None:
        """The project file of module `name` (`pkg/__init__.py` for a package), or None: not a
        module, a namespace package (no file), or not the project's."""
        located = self._locate(name)
        return located[0] if located else None

    def _locate(self, name: str) -> tuple[Path | None, tuple[Path, ...]] | None:
        if name in self._found:
            return self._found[name]
        parent, _, last = name.rpartition(".")
        if not all(part.isidentifier() for part in name.split(".")):
            located = None
        elif parent:
            outer = self._locate(parent)  # not the project's: neither are its submodules
            located = None if outer is None else self._search(last, outer[1], name)
        else:
            located = self._search(name, self._search_path(), name)
        if located is not None and not self._in_project(located):
            located = None
        self._found[name] = located
        return located

    def _search_path(self) -> list[Path]:
        root = str(self._root)
        return [Path(entry or ".") for entry in (root, *sys.path)]

    def _search(
        self, last: str, folders: Iterable[Path], name: str
    ) -> tuple[Path | None, tuple[Path, ...]] | None:
        """Module `last` in `folders` (the search path, or a package's folders): an imported
        module where it was loaded from; else the first regular package or `.py` file, else the
        folders of a namespace package."""
        if name in sys.modules:
            return self._loaded(name)
        portions: list[Path] = []
        for folder in folders:
            package = folder / last
            init = package / "__init__.py"
            if init.is_file():
                return init, (package,)
            file = folder / f"{last}.py"
            if file.is_file():
                return file, ()
            if package.is_dir():
                portions.append(package)
        return (None, tuple(portions)) if portions else None

    @staticmethod
    def _loaded(name: str) -> tuple[Path | None, tuple[Path, ...]] | None:
        """Where an imported module came from; None for a built-in, a frozen or a compiled one
        (no `.py` source to hash) and for a name not imported."""
        module = sys.modules.get(name)
        if module is None:
            return None
        origin = getattr(module, "__file__", None)
        try:
            folders = tuple(Path(folder) for folder in getattr(module, "__path__", None) or ())
        except TypeError:  # a module object that is not what it says
            folders = ()
        if isinstance(origin, str) and origin.endswith(".py"):
            return Path(origin), folders
        if origin is None and folders:  # a namespace package
            return None, folders
        return None

    def _in_project(self, located: tuple[Path | None, tuple[Path, ...]]) -> bool:
        """Under the rootdir, and neither in an installed-packages folder nor in the standard
        library (an environment can live inside the project: a .venv, a conda folder)."""
        origin, folders = located
        where = origin if origin is not None else (folders[0] if folders else None)
        if where is None:
            return False
        real = Path(os.path.realpath(where))
        if not real.is_relative_to(self._root):
            return False
        if _INSTALLED_FOLDERS.intersection(real.relative_to(self._root).parts):
            return False
        if self._stdlib is None:
            self._stdlib = Path(os.path.realpath(os.path.dirname(os.__file__)))
        return not real.is_relative_to(self._stdlib)
