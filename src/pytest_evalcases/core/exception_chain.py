"""An exception of the system under test in a few lines: its chain from what the system raised
down to the root cause, the HTTP request an HTTP client's error carries (method and URL), and
where the user's code was when it raised. A model or network error deep inside an SDK is
otherwise ~1,000 lines of the SDK's and the HTTP library's frames; pytest's full traceback stays
one option away (--tb=long)."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from urllib.parse import urlsplit

from .names import clip

MESSAGE_CHARS = 300  # of each link's message
LINKS_SHOWN = 4  # the first link and the last ones (the root cause last)
FRAMES_SHOWN = 3  # of the user's code, the innermost


def chain_of(exc: BaseException) -> list[BaseException]:
    """The exception, then what caused it, down to the root cause: `raise ... from` first, else
    the exception being handled (unless `from None` suppressed it). A cycle ends the chain."""
    chain: list[BaseException] = []
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        chain.append(link)
        if link.__cause__ is not None:
            link = link.__cause__
        else:
            link = None if link.__suppress_context__ else link.__context__
    return chain


def link_text(exc: BaseException, named: bool = True) -> str:
    """`Type: message` on one line (the message's lines joined), cut to MESSAGE_CHARS; the
    message alone when not `named` (and it has one)."""
    message = _message(exc)
    name = type(exc).__name__
    text = (f"{name}: {message}" if named else message) if message.strip() else name
    return clip(text, MESSAGE_CHARS, ellipsis="…")


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a broken __str__ must not hide the error it describes
        return "<message not printable>"


def _ours(exc: BaseException) -> bool:
    """An error of this plugin: its message says what happened (`setup_user('u-ana') of suite
    'memory' raised …`); its class name is ours, not the user's to read."""
    return type(exc).__module__.split(".", 1)[0] == __name__.split(".", 1)[0]


def request_of(chain: list[BaseException]) -> str | None:
    """`METHOD scheme://host[:port]/path` of the first link that carries an HTTP request: httpx,
    openai and requests errors have `.request`, aiohttp's `.request_info`. The query string and
    any user:password are left out: a provider may take its key there."""
    for link in chain:
        for attribute in ("request", "request_info"):
            try:  # httpx raises RuntimeError for an error made without a request
                request = getattr(link, attribute, None)
            except Exception:
                continue
            method, url = getattr(request, "method", None), getattr(request, "url", None)
            if method and url:
                return f"{method} {_shown_url(str(url))}"
    return None


def _shown_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return clip(url.split("?", 1)[0], MESSAGE_CHARS, ellipsis="…")
    if not parts.scheme or not host:
        return clip(url.split("?", 1)[0], MESSAGE_CHARS, ellipsis="…")
    host = f"[{host}]" if ":" in host else host  # an IPv6 address
    return clip(f"{parts.scheme}://{host}{port}{parts.path}", MESSAGE_CHARS, ellipsis="…")


# A frame's file name -> the path to show for it, or None: not the user's code.
UserPath = Callable[[str], str | None]


def user_frames(chain: list[BaseException], user_path: UserPath) -> list[str]:
    """`file:line in function: source` of the innermost frames of the user's code (at most
    FRAMES_SHOWN, outermost first) the exception passed through: of the first link that passed
    through any, which is where the user's code made the call."""
    for link in chain:
        frames = [
            (shown, frame)
            for frame in traceback.extract_tb(link.__traceback__)
            if (shown := user_path(frame.filename)) is not None
        ]
        if frames:
            return [_frame_text(shown, frame) for shown, frame in frames[-FRAMES_SHOWN:]]
    return []


def _frame_text(shown: str, frame: traceback.FrameSummary) -> str:
    where = f"{shown}:{frame.lineno} in {frame.name}"
    source = (frame.line or "").strip()
    return clip(f"{where}: {source}" if source else where, 200, ellipsis="…")


def exception_lines(exc: BaseException, user_path: UserPath = lambda path: None) -> list[str]:
    """The exception in a few lines: `Type: message (METHOD URL)` of what the system raised (an
    error of ours, e.g. retries spent on it: its message alone),
    `caused by Type: message` down to the root cause (a repeated link once), and `at file:line`
    for the innermost frames of the user's code."""
    chain = chain_of(exc)
    texts: list[str] = []
    for link in chain:
        text = link_text(link, named=not _ours(link))  # ours: its message says what happened
        if text not in texts:
            texts.append(text)
    request = request_of(chain)
    lines = [texts[0] + (f" ({request})" if request else "")]
    causes = texts[1:]
    if len(causes) >= LINKS_SHOWN:  # the first causes and the root cause; the middle counted
        kept = LINKS_SHOWN - 2
        lines += [f"  caused by {text}" for text in causes[:kept]]
        lines.append(f"  … ({len(causes) - kept - 1} more)")
        causes = causes[-1:]
    lines += [f"  caused by {text}" for text in causes]
    return lines + [f"  at {where}" for where in user_frames(chain, user_path)]


def exception_summary(exc: BaseException) -> str:
    """The exception on one line: what the system raised, with its request, and its root cause
    (`APIConnectionError: Connection error. (POST http://…); root cause: ConnectError: …`). An
    error of ours shows its message alone, and a root cause its message already names is not
    said again."""
    chain = chain_of(exc)
    request = request_of(chain)
    text = link_text(chain[0], named=not _ours(chain[0])) + (f" ({request})" if request else "")
    root, said = link_text(chain[-1]), link_text(chain[0])
    root_message = _message(chain[-1]).strip()
    repeated = root in said or (bool(root_message) and root_message in said)
    if len(chain) > 1 and not repeated:
        text += f"; root cause: {root}"
    return text
