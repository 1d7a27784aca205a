"""The network guard of --replay-http: a connection the recording cannot serve is refused.

vcrpy serves the clients it patches without opening a socket; anything else (a raw socket, a
client vcrpy does not patch, a name lookup, a UDP datagram, a child process) would reach the
network. While a replaying case runs, connections, datagrams and name lookups are refused unless
the suite lists the host in `allow_hosts`; loopback is no exception, since a local server is part
of what was recorded. A subprocess is refused unless the suite sets `allow_subprocess`, and then
starts with proxies pointing at a closed port.

The guard listens to CPython's audit events (`socket.connect`, `socket.sendto`, `subprocess.Popen`,
`os.system`...), raised by the C code itself: a raw `_socket.socket`, a method saved before the
guard was installed or an asyncio transport cannot go round it as they could round a patch of
`socket.socket`. An audit hook cannot be removed, so it is added once per process and does
nothing while no guard is installed.

"While a replaying case runs" covers the whole process: a connection from any thread then is the
case's. A thread the system started (at the import of its module, in `setup`, `setup_user` or
`run`) carries its owner for its whole life, so its connection after its case ended is refused
too, and kept for the end of the run (`refused_outside_cases`), which then fails. A plain `send`
raises no audit event: on a socket connected before the case it is checked by `socket.socket`'s
(and `ssl.SSLSocket`'s) send methods, wrapped while the guard is installed.
"""

from __future__ import annotations

import _thread
import functools
import inspect
import ipaddress
import os
import platform
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .router import CaseHttp, HttpLayer, UnservedRequest, context_case

try:
    import _posixsubprocess
except ImportError:  # not on Windows
    _posixsubprocess = None

# A proxy nobody listens on (the discard port of loopback): a child's HTTP clients that honour
# the proxy variables fail at once instead of reaching the network.
DENYING_PROXY = "http://127.0.0.1:9"
PROXY_DENYING_ENV = {
    **{name: DENYING_PROXY for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")},
    **{name: DENYING_PROXY for name in ("http_proxy", "https_proxy", "all_proxy")},
    "NO_PROXY": "",
    "no_proxy": "",
}

_FORWARD_LOOKUPS = frozenset(
    {"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex"}
)
_REVERSE_LOOKUPS = frozenset({"socket.gethostbyaddr", "socket.getnameinfo"})
_LOOKUPS = _FORWARD_LOOKUPS | _REVERSE_LOOKUPS
_SENDS = frozenset({"socket.sendto", "socket.sendmsg"})
_CHILDREN = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.startfile"}
)
_WATCHED = frozenset({"socket.connect"}) | _LOOKUPS | _SENDS | _CHILDREN

_installed: NetworkGuard | None = None  # the guard the audit hook reports to, while installed
# The last replay's guard, once it came down: the threads its system left running (a non-daemon
# one outlives pytest until the interpreter's exit) stay refused until another run begins.
_left_behind: NetworkGuard | None = None
_hooked = False
_inside = threading.local()  # the guard's own look-ups raise audit events too
_INET = (socket.AF_INET, socket.AF_INET6)


def _unless_inside(check: Callable[..., None], *args: Any) -> None:
    """`check(*args)`, unless the guard itself is at work in this thread (its own look-ups)."""
    if not getattr(_inside, "busy", False):
        _inside.busy = True
        try:
            check(*args)
        finally:
            _inside.busy = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event in _WATCHED:
        guard = _installed
        if guard is None and getattr(_owners, "owner", None) is not None:
            guard = _left_behind
        if guard is not None:
            _unless_inside(guard.on_event, event, args)


# ---- the threads the system starts ------------------------------------------------------------
_owners = threading.local()  # .owner: the replaying case (or import) whose system started it
# The import of a system module (and its fingerprint()) under --replay-http: threads started
# there belong to the system, though no case runs yet.
_SYSTEM_CODE: ContextVar[CaseHttp | None] = ContextVar("evalcases_system_code", default=None)
# threading's own name for the start function (3.13 renamed it), and _thread's two
_START_FUNCTIONS = (
    (threading, "_start_new_thread"),
    (threading, "_start_joinable_thread"),
    (_thread, "start_new_thread"),
    (_thread, "start_new"),
)
_tagging_users = 0
_tagging_lock = threading.Lock()
_saved_starts: list[tuple[Any, str, Any]] = []


def thread_owner() -> CaseHttp | None:
    """The replaying case (or system import) that started the calling thread, if one did."""
    return getattr(_owners, "owner", None)


def _starting_owner() -> CaseHttp | None:
    """The owner of a thread started now: its starter's, or the replaying case (or import) the
    starting code runs for."""
    owner = getattr(_owners, "owner", None)
    if owner is not None:
        return owner
    case = context_case()
    if case is not None and case.replaying:
        return case
    return _SYSTEM_CODE.get()


def _owned_start(start: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(start)
    def start_owned(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        owner = _starting_owner()
        if owner is not None:
            inner = function

            def function(*run_args: Any, **run_kwargs: Any) -> Any:
                _owners.owner = owner
                return inner(*run_args, **run_kwargs)

        return start(function, *args, **kwargs)

    return start_owned


def _tag_threads(on: bool) -> None:
    """Count a user of the thread tagging (the guard, an import): installed for the first,
    removed with the last."""
    global _tagging_users
    with _tagging_lock:
        _tagging_users += 1 if on else -1
        if on and _tagging_users == 1:
            for module, name in _START_FUNCTIONS:
                start = getattr(module, name, None)
                if start is not None:
                    _saved_starts.append((module, name, start))
                    setattr(module, name, _owned_start(start))
        elif not on and _tagging_users == 0:
            for module, name, start in _saved_starts:
                setattr(module, name, start)
            _saved_starts.clear()


@contextmanager
def system_code(where: str, allow_hosts: list[str], allow_subprocess: bool) -> Iterator[None]:
    """The threads started inside (by the import of a system module, its fingerprint()) belong
    to the system: while the replay runs, their connections are refused unless allowed."""
    global _left_behind
    _left_behind = None  # a new run (in a process that ran one before: pytester's)
    owner = CaseHttp(where, [], allow_hosts=allow_hosts, allow_subprocess=allow_subprocess)
    token = _SYSTEM_CODE.set(owner)
    _tag_threads(True)
    try:
        yield
    finally:
        _tag_threads(False)
        _SYSTEM_CODE.reset(token)


# ---- sends on a socket connected before the case ---------------------------------------------
_SEND_METHODS = ("send", "sendall", "sendfile")


def _peer_checked(method: Callable[..., Any], what: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(sock: Any, *args: Any, **kwargs: Any) -> Any:
        guard = _installed
        if guard is not None:
            _unless_inside(guard.check_peer, sock, what)
        return method(sock, *args, **kwargs)

    return checked


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


_ALLOW_HOSTS_HINT = (
    'a replay must not reach the network: list the host in the suite\'s "allow_hosts" if it may '
    "be reached offline"
)


def _connection_refusal(where: str) -> str:
    # (the wording tests and users already match on: a connection, or the lookup before one)
    return (
        f"network guard: the system opened a connection to {where}, which the HTTP recording "
        "cannot serve (a client vcrpy does not patch, or a raw socket)"
    )


def _text(value: Any) -> str:
    return os.fsdecode(value) if isinstance(value, bytes | os.PathLike) else str(value)


def _shown_command(command: Any) -> str:
    """A child's command line as the error shows it: an argv list or a shell string, clipped."""
    if isinstance(command, str | bytes | os.PathLike):
        shown = repr(_text(command))
    else:
        try:
            shown = repr([_text(part) for part in command])
        except TypeError:
            shown = repr(command)
    return shown if len(shown) <= 120 else shown[:118] + " …"


def proxy_denying(env: Mapping[str, Any]) -> dict[str, Any]:
    """`env` with every proxy variable pointing at a closed loopback port (bytes keys kept)."""
    denied = dict(env)
    if any(isinstance(name, bytes) for name in denied):
        denied.update({os.fsencode(k): os.fsencode(v) for k, v in PROXY_DENYING_ENV.items()})
    else:
        denied.update(PROXY_DENYING_ENV)
    return denied


class NetworkGuard:
    def __init__(self, layer: HttpLayer) -> None:
        self._layer = layer
        self._originals: dict[str, Any] = {}
        self._resolved: dict[str, set[str]] = {}
        # What a thread of the system tried while no case ran: no case to fail then, so the
        # run fails at its end, naming each.
        self.refused_outside_cases: list[str] = []

    def _replaying_case(self) -> CaseHttp | None:
        case = self._layer.current()
        return case if case is not None and case.replaying else None

    def _allowed(self, case: CaseHttp, host: str, port: Any) -> bool:
        for entry in case.allow_hosts:  # "host" or "host:port" (an IPv6 address has no port)
            name, wanted_port = entry.split(":") if entry.count(":") == 1 else (entry, "")
            if wanted_port and str(port) != wanted_port:
                continue
            if host.lower() == name.lower() or host in self._addresses(name):
                return True
        return False

    def _addresses(self, name: str) -> set[str]:
        """An allowed host's addresses (resolved with the real lookup, once)."""
        if name not in self._resolved:
            try:
                self._resolved[name] = {info[4][0] for info in socket.getaddrinfo(name, None)}
            except OSError:
                self._resolved[name] = set()
        return self._resolved[name]

    def _check(self, host: str, port: Any, refusal: Callable[[], str]) -> None:
        case = self._replaying_case()
        owner = thread_owner()
        judged_by = case or owner
        if judged_by is not None and not self._allowed(judged_by, host, port):
            self._refuse(case, owner, refusal(), _ALLOW_HOSTS_HINT)

    def _refuse(self, case: CaseHttp | None, owner: CaseHttp | None, what: str, hint: str) -> None:
        """Fail the running case with `what` (said of the thread that did it, when the system
        started it elsewhere), or, with none running, keep it for the end of the run."""
        if owner is not None and (case is None or owner.where != case.where):
            after = " (no case was running)" if case is None else ""
            what = f"{what}, from a thread the system started during {owner.where}{after}"
        if case is not None:
            raise case.fail(f"{what}; {hint}")
        message = f"{what}; {hint}"
        if message not in self.refused_outside_cases:
            self.refused_outside_cases.append(message)
        raise UnservedRequest(message)

    def check_peer(self, sock: Any, what: str) -> None:
        """Refuse a `what` (a send) on a network socket connected to a host the case may not
        reach: one connected before the case, whose connect the guard did not see."""
        case = self._replaying_case()
        owner = thread_owner()
        if case is None and owner is None:
            return
        try:
            if sock.family not in _INET:
                return
            host, port = (str(part) for part in sock.getpeername()[:2])
        except OSError:
            return  # not connected (or closed): the call fails on its own
        self._check(
            host,
            port,
            lambda: (
                f"--replay-http blocked a {what} to {host}:{port} on a socket connected "
                "before the case"
            ),
        )

    def on_event(self, event: str, args: tuple[Any, ...]) -> None:
        """Refuse what the audit event `event` is about to do, if a replaying case does it."""
        if event in _CHILDREN:
            self._check_child(event, args)
        elif event == "socket.connect" or event in _SENDS:
            sock, address = args[0], args[1]
            if sock.family not in _INET:
                return  # a Unix socket or a socket pair: no network
            if not isinstance(address, tuple):  # sendmsg on a connected socket
                self.check_peer(sock, "sendmsg")
                return
            host, port = str(address[0]), address[1]
            if event == "socket.connect":
                self._check(host, port, lambda: _connection_refusal(f"{host}:{port}"))
            else:
                kind = "UDP" if sock.type == socket.SOCK_DGRAM else "socket"
                sent = f"{kind} {event.split('.')[1]} {host}:{port}"
                self._check(host, port, lambda: f"--replay-http blocked {sent}")
        elif event in _LOOKUPS:
            self._check_lookup(event, args)

    def _check_lookup(self, event: str, args: tuple[Any, ...]) -> None:
        target = args[0]
        if event == "socket.getnameinfo":  # a reverse lookup of (host, port)
            target = target[0] if isinstance(target, tuple) and target else target
        if target is None:
            return
        host = _text(target)
        if event in _REVERSE_LOOKUPS:
            self._check(host, None, lambda: f"--replay-http blocked a lookup of {host}'s name")
        elif not _is_ip(host):  # a literal address needs no lookup
            port = args[1] if event == "socket.getaddrinfo" else None
            where = f"{host}:{port}" if port is not None else host
            self._check(host, port, lambda: _connection_refusal(where))

    def _check_child(self, event: str, args: tuple[Any, ...]) -> None:
        case = self._replaying_case()
        owner = thread_owner()
        judged_by = case or owner
        if judged_by is None or judged_by.allow_subprocess:
            return
        command = {
            "subprocess.Popen": lambda: args[1],
            "os.system": lambda: args[0],
            "os.exec": lambda: args[1],
            "os.spawn": lambda: args[2],
            "os.posix_spawn": lambda: args[1],
        }.get(event, lambda: args[0])()
        self._refuse(
            case,
            owner,
            f"--replay-http blocked a subprocess: {_shown_command(command)}",
            'a replay must not reach the network: set "allow_subprocess": true in the suite if '
            "the child does not use the network",
        )

    def install(self) -> None:
        global _installed, _hooked, _left_behind
        if self._originals:
            return
        _left_behind = None
        if not _hooked:
            sys.addaudithook(_audit)
            _hooked = True
        # The openai SDK (and the SDKs generated alike) sends platform.platform() in its headers,
        # whose first call on Linux runs `uname -p` for the processor: asked now, outside any
        # case, it is cached (once per process, about 5 ms).
        platform.processor()
        popen_init = subprocess.Popen.__init__
        self._originals = {"popen_init": popen_init}
        subprocess.Popen.__init__ = self._denying_proxies(popen_init)  # type: ignore[method-assign]
        if _posixsubprocess is not None:  # multiprocessing starts its children here: no event
            fork_exec = self._originals["fork_exec"] = _posixsubprocess.fork_exec
            check_child = self._check_child

            def guarded_fork_exec(*args: Any, **kwargs: Any) -> Any:
                check_child("_posixsubprocess.fork_exec", args)  # args[0]: the child's argv
                return fork_exec(*args, **kwargs)

            _posixsubprocess.fork_exec = guarded_fork_exec
        for cls in (socket.socket, ssl.SSLSocket):
            for name in _SEND_METHODS:
                self._originals[f"send:{cls.__name__}.{name}"] = cls.__dict__.get(name)
                setattr(cls, name, _peer_checked(getattr(cls, name), name))
        _tag_threads(True)
        _installed = self

    def _denying_proxies(self, popen_init: Callable[..., None]) -> Callable[..., None]:
        """`Popen.__init__` that gives a child a replaying case lets start a proxy-denying
        environment (its own `env`, or this process's)."""
        signature = inspect.signature(popen_init)
        replaying_case = self._replaying_case

        @functools.wraps(popen_init)
        def init(popen: Any, *args: Any, **kwargs: Any) -> None:
            case = replaying_case() or thread_owner()  # a case's, or a thread of the system's
            if case is None or not case.allow_subprocess:
                return popen_init(popen, *args, **kwargs)  # refused by the audit hook, if a case's
            bound = signature.bind(popen, *args, **kwargs)
            env = bound.arguments.get("env")
            bound.arguments["env"] = proxy_denying(os.environ if env is None else env)
            return popen_init(*bound.args, **bound.kwargs)

        return init

    def uninstall(self) -> None:
        global _installed, _left_behind
        if not self._originals:
            return
        if _installed is self:
            _installed = None
            _left_behind = self
        subprocess.Popen.__init__ = self._originals["popen_init"]  # type: ignore[method-assign]
        if "fork_exec" in self._originals:
            _posixsubprocess.fork_exec = self._originals["fork_exec"]
        for cls in (socket.socket, ssl.SSLSocket):
            for name in _SEND_METHODS:
                own = self._originals[f"send:{cls.__name__}.{name}"]
                if own is None:
                    delattr(cls, name)  # inherited again
                else:
                    setattr(cls, name, own)
        _tag_threads(False)
        self._originals = {}
