"""Public import path of the case and trace models (`pytest_evalcases.schema.Trace`); they live
in `core/schema.py` and `core/trace.py`. Nothing inside the package imports this module."""

from .core.schema import *  # noqa: F403
from .core.schema import __all__ as _case_names
from .core.trace import *  # noqa: F403
from .core.trace import __all__ as _trace_names

__all__ = [*_case_names, *_trace_names]
