"""Public import path of the case, suite and trace models (`pytest_evalcases.schema.Trace`); they
live in `core/schema.py` (cases), `core/suite_schema.py` (suites) and `core/trace.py` (traces).
Nothing inside the package imports this module."""

from .core.schema import *  # noqa: F403
from .core.schema import __all__ as _case_names
from .core.suite_schema import Suite, User
from .core.trace import *  # noqa: F403
from .core.trace import __all__ as _trace_names

__all__ = [*_case_names, "Suite", "User", *_trace_names]
