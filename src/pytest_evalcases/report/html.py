"""What the HTML pages (dashboard.html, compare.html) share: the jinja2 environment over the
package's templates, the page's own static files (its script, its stylesheet) as text, and the
Content-Security-Policy hash that allows exactly one of them inline.

jinja2 (and markupsafe) load with the first page rendered: a run that writes no page, such as a
replay without --eval-report, never imports them.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2
    from markupsafe import Markup

TEMPLATES = "templates"  # the folder of report/ that holds the templates and static files


@lru_cache(maxsize=1)
def page_environment() -> jinja2.Environment:
    """The templates' environment: every value autoescaped, an undefined name an error."""
    import jinja2  # jinja2: heavy; only rendering a page needs it

    return jinja2.Environment(
        loader=jinja2.PackageLoader("pytest_evalcases.report", TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@lru_cache(maxsize=4)
def static_file(name: str) -> str:
    """A page's own static file (e.g. dashboard.js, compare.css), from the templates folder."""
    return (resources.files("pytest_evalcases.report") / TEMPLATES / name).read_text("utf-8")


def csp_hash(text: str) -> str:
    """The CSP source (`'sha256-...'`) that allows exactly this inline script or stylesheet."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def static_markup(text: str) -> Markup:
    """One of our own static files, to be inserted as it is (not escaped): never for data."""
    from markupsafe import Markup  # markupsafe (jinja2's): only rendering a page needs it

    return Markup(text)
