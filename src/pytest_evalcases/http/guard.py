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
"""

from __future__ import annotations

import functools
import inspect
import ipaddress
import os
import platform
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .router import CaseHttp, HttpLayer

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
_hooked = False
_inside = threading.local()  # the guard's own look-ups raise audit events too


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event in _WATCHED:
        guard = _installed
        if guard is not None and not getattr(_inside, "busy", False):
            _inside.busy = True
            try:
                guard.on_event(event, args)
            finally:
                _inside.busy = False


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
        if case is not None and not self._allowed(case, host, port):
            raise case.fail(f"{refusal()}; {_ALLOW_HOSTS_HINT}")

    def on_event(self, event: str, args: tuple[Any, ...]) -> None:
        """Refuse what the audit event `event` is about to do, if a replaying case does it."""
        if event in _CHILDREN:
            self._check_child(event, args)
        elif event == "socket.connect" or event in _SENDS:
            sock, address = args[0], args[1]
            if sock.family not in (socket.AF_INET, socket.AF_INET6):
                return  # a Unix socket or a socket pair: no network
            if not isinstance(address, tuple):
                return  # sendmsg on a connected socket: its connect was checked
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
        if case is None or case.allow_subprocess:
            return
        command = {
            "subprocess.Popen": lambda: args[1],
            "os.system": lambda: args[0],
            "os.exec": lambda: args[1],
            "os.spawn": lambda: args[2],
            "os.posix_spawn": lambda: args[1],
        }.get(event, lambda: args[0])()
        raise case.fail(
            f"--replay-http blocked a subprocess: {_shown_command(command)}; a replay must not "
            'reach the network: set "allow_subprocess": true in the suite if the child does not '
            "use the network"
        )

    def install(self) -> None:
        global _installed, _hooked
        if self._originals:
            return
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
        _installed = self

    def _denying_proxies(self, popen_init: Callable[..., None]) -> Callable[..., None]:
        """`Popen.__init__` that gives a child a replaying case lets start a proxy-denying
        environment (its own `env`, or this process's)."""
        signature = inspect.signature(popen_init)
        replaying_case = self._replaying_case

        @functools.wraps(popen_init)
        def init(popen: Any, *args: Any, **kwargs: Any) -> None:
            case = replaying_case()
            if case is None or not case.allow_subprocess:
                return popen_init(popen, *args, **kwargs)  # refused by the audit hook, if a case's
            bound = signature.bind(popen, *args, **kwargs)
            env = bound.arguments.get("env")
            bound.arguments["env"] = proxy_denying(os.environ if env is None else env)
            return popen_init(*bound.args, **bound.kwargs)

        return init

    def uninstall(self) -> None:
        global _installed
        if not self._originals:
            return
        if _installed is self:
            _installed = None
        subprocess.Popen.__init__ = self._originals["popen_init"]  # type: ignore[method-assign]
        if "fork_exec" in self._originals:
            _posixsubprocess.fork_exec = self._originals["fork_exec"]
        self._originals = {}
