"""`memdesk serve`: the review workstation in a browser, one login per reviewer.

Built from textual-serve's building blocks (its page assets: textual.js with xterm.js, and the
web-driver protocol its `AppService` speaks) rather than its `Server`, because that server has no
notion of who is at the other end: it serves the page, its static files and the websocket that
starts the app to anyone, and runs one fixed command through a shell. Here:

- Every route but the login form needs a session. A session is a random token in an HttpOnly,
  SameSite=Strict cookie, held in this process's memory (a restart logs everyone out), and it is
  valid only while the reviewer's entry in the credentials file is unchanged: removing a reviewer or
  changing their password ends their sessions and closes their open workstations.
- The app subprocess (one per websocket, `WorkstationProcess`) is started with
  `--reviewer NAME` where NAME is the session's reviewer. Nothing the page sends (query string,
  websocket messages) can name a reviewer: the websocket handler reads only terminal sizes and
  keystrokes from it.
- POSTs and the websocket must come from this server's own origin (the Origin header matches the
  Host header): SameSite alone would let another port of the same host (same *site*) drive it.
- The cookie alone is not a session: cookies are not isolated by port, so a process on another port
  of the same host receives it (and can plant one). The login response also hands the page a
  session proof that it keeps in localStorage (scoped to scheme, host AND port); the page sends it
  as the websocket's first message, and no workstation starts without the proof that matches the
  cookie. Behind TLS the cookie is `__Host-memdesk_session`, Secure.
- Requests whose Host is not on the allow-list are refused (DNS rebinding), and Origin must match
  both the scheme and the host the browser used.
- Failed logins are throttled per (client, name) and per client, decided and counted before any
  hash is computed, with exponential backoff and a cap; the client is the peer address, or the
  last X-Forwarded-For entry when the peer is a proxy named with --trusted-proxy. At most
  SCRYPT_LANES scrypt checks run at once, and unknown names have a lane of their own, so a flood of
  made-up names never queues ahead of a real reviewer's login.
- A credentials file that turns invalid fails closed: every session ends, logins are refused, and
  the reason is logged, until the file is valid again.
- A workstation is kept ready for the next session (`WARM_SPARES`, review_app/warm.py): started
  before anyone logs in, it has imported everything and opened the store, and waits for the
  server's order naming the session's reviewer. The browser paints at once after login instead of
  after a cold start (8-12 s on a loaded machine). Still one process per websocket; a new spare is
  started as soon as one is taken.

Plain HTTP only: TLS belongs to a reverse proxy in front of it (README, "memdesk serve"), which is
why it binds to 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import html
import json
import logging
import os
import secrets
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import textual_serve
from aiohttp import WSMsgType, web

from engine.storage import is_postgres_url, masked

from .auth import NAME_PATTERN, CredentialFile, hash_password, verify_password

log = logging.getLogger("memdesk.serve")

COOKIE = "memdesk_session"
TLS_COOKIE = "__Host-memdesk_session"
"""Behind TLS: `__Host-` makes the browser refuse it unless Secure, Path=/ and without Domain."""
SESSION_SECONDS = 12 * 3600
MAX_APPS_PER_REVIEWER = 4
"""Each open tab is one workstation process (~100 MB); a reviewer rarely needs more than two."""
THROTTLE_FAILURES, THROTTLE_SECONDS, THROTTLE_CAP = 5, 30.0, 300.0
"""After this many failed logins for one name from one client, the next attempt waits this long,
doubling with every further failure up to the cap."""
CLIENT_FAILURES = 20
"""Failed logins from one client, whatever the names, before that client waits (same backoff)."""
SCRYPT_LANES = 2
"""scrypt checks that may run at once for known names (the machine's cores stay responsive)."""
DECOY_QUEUE = 32
"""Attempts for unknown names waiting for their own single lane; more are refused at once (503)."""
WARM_SPARES = 1
"""Workstations kept started, waiting for the next session (0: every session starts cold); the
deployment sets it with $MEMDESK_SERVE_WARM (0-8)."""
WARM_ENV = "MEMDESK_SERVE_WARM"


def warm_spares_setting() -> int:
    """$MEMDESK_SERVE_WARM, or WARM_SPARES. A value that is not a whole number from 0 to 8 is
    logged as an error and no spare is started: sessions then start cold, which is slower but
    otherwise the same, and the log says why."""
    raw = os.environ.get(WARM_ENV)
    if raw is None or not raw.strip():
        return WARM_SPARES
    if not raw.strip().isdigit() or not 0 <= int(raw) <= 8:
        log.error("$%s must be a whole number from 0 to 8, not %r: no workstation is started ahead", WARM_ENV, raw)
        return 0
    return int(raw)


PROOF_SECONDS = 10.0
"""How long a websocket may take to send its session proof."""
SWEEP_SECONDS = 10.0
"""How often open workstations are checked against their session (expiry, removed reviewer)."""
MIN_COLS, MAX_COLS, MIN_ROWS, MAX_ROWS = 20, 500, 8, 200
STATIC_DIR = Path(textual_serve.__file__).parent / "static"
"""textual-serve's page assets: textual.js (xterm.js and the websocket protocol), its CSS and fonts."""


@dataclass
class Session:
    token: str
    proof: str
    """The second half of the session, held by the page in origin-scoped storage, never in a cookie."""
    reviewer: str
    credential: str
    """The reviewer's hash at login: a different hash now means the password changed."""
    expires: float


SESSION = web.RequestKey("session", Session)
"""Where the guard leaves the request's session for the handlers."""


class LoginThrottle:
    """Failures per key with exponential backoff and a cap. `admit` decides AND counts an attempt
    in one step, before any hash is computed, so a burst sent at once gets no more checks than a
    slow series would; a success then takes the attempt back. Bounded, so a flood of made-up
    names cannot grow it."""

    def __init__(self, clock: Callable[[], float], free: int, limit: int = 10_000) -> None:
        self.clock = clock
        self.free = free
        self.limit = limit
        self._failures: dict[str, tuple[int, float]] = {}

    def wait_left(self, key: str) -> float:
        count, last = self._failures.get(key, (0, 0.0))
        if count < self.free:
            return 0.0
        delay = min(THROTTLE_CAP, THROTTLE_SECONDS * 2 ** (count - self.free))
        return max(0.0, last + delay - self.clock())

    def count(self, key: str) -> None:
        count, _ = self._failures.pop(key, (0, 0.0))
        if len(self._failures) >= self.limit:
            self._failures.pop(next(iter(self._failures)))  # the oldest entry
        self._failures[key] = (count + 1, self.clock())

    def reset(self, key: str) -> None:
        self._failures.pop(key, None)


class LoginGate:
    """Per (client, name) and per client: a stranger guessing dan's password from their own address
    slows down only themselves; the real dan, from his address, is never kept out by it."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.by_name = LoginThrottle(clock, THROTTLE_FAILURES)
        self.by_client = LoginThrottle(clock, CLIENT_FAILURES)

    @staticmethod
    def _name_key(client: str, name: str) -> str:
        return f"{client} {name[:64].lower()}"  # longer names never log in; they must not grow it

    def admit(self, client: str, name: str) -> float:
        """0 when the attempt may be checked (and it is counted now), else the seconds to wait."""
        key = self._name_key(client, name)
        wait = max(self.by_name.wait_left(key), self.by_client.wait_left(client))
        if wait == 0.0:
            self.by_name.count(key)
            self.by_client.count(client)
        return wait

    def succeeded(self, client: str, name: str) -> None:
        self.by_name.reset(self._name_key(client, name))
        self.by_client.reset(client)


def _clamp(value: Any, low: int, high: int, default: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return min(max(number, low), high)


def _redirect(location: str) -> web.Response:
    """A 303 that can carry a cookie (after a POST, the browser follows it with a GET)."""
    return web.Response(status=303, headers={"Location": location})


def _origin_refused(request: web.Request, scheme: str) -> web.HTTPForbidden:
    return web.HTTPForbidden(
        text=f"refused: Origin {request.headers.get('Origin')!r} is not this server ({scheme}://{request.host}). "
        "Behind a reverse proxy, pass the Host header through (and X-Forwarded-Proto, with --trusted-proxy)."
    )


_LOGIN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>memdesk: log in</title><link rel="icon" href="data:,">
<style>
body {{ background: #0c181f; color: #e8eef2; font: 16px system-ui, sans-serif; display: flex;
       align-items: center; justify-content: center; height: 100vh; margin: 0; }}
form {{ background: #12232d; padding: 2em 2.5em; border-radius: 6px; min-width: 18em; }}
h1 {{ font-size: 1.3em; margin: 0 0 1em; }}
label {{ display: block; margin: .8em 0 .3em; }}
input {{ width: 100%; box-sizing: border-box; padding: .5em; font-size: 1em; border: 1px solid #3a5566;
        background: #0c181f; color: #e8eef2; border-radius: 3px; }}
button {{ margin-top: 1.4em; width: 100%; padding: .6em; font-size: 1em; background: #2f6f9f; color: white;
         border: none; border-radius: 3px; cursor: pointer; }}
.error {{ color: #ff9a8a; margin: 0 0 .5em; }}
</style></head>
<body><form method="post" action="/login">
<h1>memdesk review</h1>{error}
<label for="name">Reviewer</label><input id="name" name="name" autocomplete="username" required autofocus
 value="{name}">
<label for="password">Password</label><input id="password" name="password" type="password"
 autocomplete="current-password" required>
<button type="submit" id="login">Log in</button>
</form></body></html>
"""

_WORKSTATION_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>memdesk: {reviewer}</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/css/xterm.css">
<link rel="stylesheet" href="/memdesk.css">
<script src="/static/js/textual.js"></script>
<script src="/memdesk.js"></script>
</head><body>
<header id="bar"><span>memdesk · {db} · reviewing as <b id="reviewer">{reviewer}</b></span>
<form method="post" action="/logout"><button type="submit" id="logout">Log out</button></form></header>
<div id="terminal" class="textual-terminal" data-font-size="16"></div>
<div id="ended"><span id="why">The workstation has closed.</span> <a href="/">Open it again</a></div>
</body></html>
"""

_LOGGED_IN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>memdesk: logging in</title><link rel="icon" href="data:,">
<meta name="memdesk-proof" content="{proof}"><script src="/login.js"></script></head>
<body><p>Logging in&hellip; <a href="/">continue</a></p></body></html>
"""
"""The login's answer: the page keeps the proof in localStorage (this origin only), then opens /."""

_LOGIN_JS = """// memdesk: keep the session proof where only this origin (scheme, host, port) can read it.
localStorage.setItem("memdesk-proof", document.querySelector('meta[name="memdesk-proof"]').content);
window.location.replace("/");
"""

_CSS = """@font-face { font-family: 'Roboto Mono'; src: url('/static/fonts/RobotoMono-VariableFont_wght.ttf'); }
body { margin: 0; background: #0c181f; color: #e8eef2; font: 14px system-ui, sans-serif; overflow: hidden; }
#bar { height: 28px; display: flex; align-items: center; justify-content: space-between; padding: 0 10px;
       background: #12232d; }
#bar form { margin: 0; }
#bar button { background: #2f6f9f; color: white; border: none; border-radius: 3px; padding: 3px 10px;
              cursor: pointer; }
#terminal.textual-terminal { width: 100vw; height: calc(100vh - 28px); }
#ended { display: none; position: absolute; top: 40%; width: 100%; text-align: center; font-size: 18px; }
#ended a { color: #8fd0ff; }
body.-closed #ended { display: block; }
body.-closed #terminal { opacity: .25; }
"""

_JS = """// memdesk: point textual.js at this server's websocket, as the browser reached it (http -> ws,
// https -> wss behind a TLS proxy), and start only once the terminal font is loaded, so that the
// terminal is measured with the glyphs it will draw.
(function () {
  // Every websocket this page opens sends the session proof first (textual.js adds its own "open"
  // listener after construction, so this one runs before its first message), and the page says
  // why it closed when the server gives a reason.
  const Native = window.WebSocket;
  window.WebSocket = function (url, protocols) {
    const socket = protocols === undefined ? new Native(url) : new Native(url, protocols);
    socket.addEventListener("open", function () {
      socket.send(JSON.stringify(["proof", localStorage.getItem("memdesk-proof") || ""]));
    });
    socket.addEventListener("close", function (event) {
      if (event.reason) {
        document.getElementById("why").textContent = "The workstation has closed: " + event.reason + ".";
      }
    });
    return socket;
  };
  window.WebSocket.prototype = Native.prototype;
  document.addEventListener("submit", function (event) {
    if (event.target.action.endsWith("/logout")) { localStorage.removeItem("memdesk-proof"); }
  });
  const start = window.onload;
  window.onload = async function (event) {
    const terminal = document.getElementById("terminal");
    const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    terminal.dataset.sessionWebsocketUrl = scheme + window.location.host + "/ws";
    try { await document.fonts.load("16px 'Roboto Mono'"); } catch (e) { /* draw with the fallback */ }
    start(event);
  };
})();
"""

_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "font-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",  # a framed terminal could be fed keystrokes by a clickjacking page
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would make Chromium send `Origin: null` on POSTs
    "Cache-Control": "no-store",
}


class WorkstationProcess:
    """One workstation subprocess speaking Textual's web-driver protocol, as textual-serve's
    `AppService` does, written out here because the server needs what that class does not give:
    an argv (no shell between the session and the process), an environment without
    $MEMDESK_REVIEWER, and a stop that waits for the process and kills it if it hangs.

    Protocol: the app prints `__GANGLION__` once, then frames of 1 type byte + 4 length bytes +
    payload: `D` terminal output, `M` JSON meta (`exit` when it is done), `P` file deliveries (the
    workstation makes none; dropped). The server writes the same frames to its stdin: `D`
    keystrokes, `M` resize/focus/blur/quit.
    """

    PRELUDE_LINES = 20

    def __init__(
        self,
        argv: list[str],
        send: Callable[[bytes], Awaitable[None]] | None = None,
        closed: Callable[[], Awaitable[Any]] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.argv = argv
        self.env = env or {}
        self._send = send
        self._closed = closed
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def spawn(self, width: int | None = None, height: int | None = None) -> None:
        """Start the process (a warm one gets its size with its order, `begin`)."""
        env = {k: v for k, v in os.environ.items() if k not in ("MEMDESK_REVIEWER", "COLUMNS", "ROWS")}
        env.update(
            TEXTUAL_DRIVER="textual.drivers.web_driver:WebDriver",
            TEXTUAL_FPS="60",
            TEXTUAL_COLOR_SYSTEM="truecolor",
            TERM_PROGRAM="textual",
        )
        if width is not None and height is not None:
            env.update(COLUMNS=str(width), ROWS=str(height))
        env.update(self.env)
        self._process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env
        )

    async def start(self, width: int, height: int) -> None:
        """A cold start: the reviewer is in the argv."""
        await self.spawn(width, height)
        self._reader = asyncio.create_task(self._read())

    async def begin(
        self,
        send: Callable[[bytes], Awaitable[None]],
        closed: Callable[[], Awaitable[Any]],
        *,
        reviewer: str,
        width: int,
        height: int,
    ) -> None:
        """Hand a warm process its session: the order line (review_app/warm.py), then relay."""
        self._send, self._closed = send, closed
        process = self._process
        assert process is not None and process.stdin is not None
        order = json.dumps({"reviewer": reviewer, "width": width, "height": height}) + "\n"
        with contextlib.suppress(ConnectionError, RuntimeError):
            process.stdin.write(order.encode("utf-8"))
            await process.stdin.drain()
        self._reader = asyncio.create_task(self._read())

    async def _write(self, kind: bytes, payload: bytes) -> None:
        if self._process is None or self._process.stdin is None or self._process.returncode is not None:
            return
        with contextlib.suppress(ConnectionError, RuntimeError):
            self._process.stdin.write(kind + len(payload).to_bytes(4, "big") + payload)
            await self._process.stdin.drain()

    async def keys(self, text: str) -> None:
        await self._write(b"D", text.encode("utf-8"))

    async def meta(self, **data: Any) -> None:
        await self._write(b"M", json.dumps(data).encode("utf-8"))

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        try:
            for _ in range(self.PRELUDE_LINES):
                line = await stdout.readline()
                if not line or line == b"__GANGLION__\n":
                    break
            else:
                log.error("the workstation did not start (no web-driver prelude)")
                return
            while line:
                header = await stdout.readexactly(5)
                payload = await stdout.readexactly(int.from_bytes(header[1:], "big"))
                if header[:1] == b"D" and self._send is not None:
                    await self._send(payload)
                elif header[:1] == b"M" and json.loads(payload).get("type") == "exit":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, RuntimeError, ValueError):
            pass  # the app ended, the browser went away, or a frame was malformed: either way, done
        finally:
            if self._closed is not None:
                await self._closed()

    async def stop(self, timeout: float = 15.0) -> None:
        """Ask the app to quit (it releases its lease on the way out); kill it if it does not. A
        warm process that has had no order yet is told by the end of its stdin."""
        process = self._process
        if process is None:
            return
        if self._reader is None and process.stdin is not None:
            process.stdin.close()
        else:
            await self.meta(type="quit")
        try:
            await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            log.warning("workstation %s did not quit within %.0f s; killed", process.pid, timeout)
            process.kill()
            await process.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader


class WorkstationServer:
    """The aiohttp application behind `memdesk serve` (see the module docstring)."""

    def __init__(
        self,
        db_path: str,
        credentials: CredentialFile,
        *,
        keymap: str | None = None,
        session_seconds: float = SESSION_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        allowed_hosts: Iterable[str] = (),
        trusted_proxies: Iterable[str] = (),
        warm_spares: int | None = None,
    ) -> None:
        self.db_path = db_path if is_postgres_url(db_path) else str(Path(db_path).resolve())
        self.credentials = credentials
        self.keymap = str(Path(keymap).resolve()) if keymap else None
        self.session_seconds = session_seconds
        self.clock = clock
        self.throttle = LoginGate(clock)
        self.allowed_hosts = {"localhost", "127.0.0.1", "::1"} | {h.lower().strip("[]") for h in allowed_hosts}
        """Host header names this server answers to; `serve` adds the address it binds."""
        self.trusted_proxies = frozenset(trusted_proxies)
        self._known_lane = asyncio.Semaphore(SCRYPT_LANES)
        self._decoy_lane = asyncio.Semaphore(1)
        self._decoy_waiting = 0
        self._credentials_error: str | None = None
        self._sessions: dict[str, Session] = {}
        self._sockets: dict[web.WebSocketResponse, Session] = {}
        self._apps: set[WorkstationProcess] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self.warm_spares = warm_spares_setting() if warm_spares is None else warm_spares
        self._spares: list[WorkstationProcess] = []
        self._refilling: asyncio.Task[None] | None = None
        # Checked when a name is unknown, so that a wrong name costs what a wrong password costs.
        self._decoy = hash_password(secrets.token_urlsafe(16))

    @property
    def shown_db(self) -> str:
        """What the page header names: a file's name, or the URL with its password masked."""
        return masked(self.db_path) if is_postgres_url(self.db_path) else Path(self.db_path).name

    # -- the app subprocess --------------------------------------------------------------------

    def app_command(self, reviewer: str) -> list[str]:
        """The argv of one workstation; the reviewer is the session's (checked against
        NAME_PATTERN at login, and an argv element, never shell text)."""
        argv = [sys.executable, "-m", "review_app.cli", "review", "--reviewer", reviewer]
        if self.keymap:
            argv += ["--keymap", self.keymap]
        return argv

    def warm_command(self) -> list[str]:
        """The argv of a workstation started before its session (review_app/warm.py): no reviewer;
        the server's order names it."""
        argv = [sys.executable, "-m", "review_app.warm"]
        if self.keymap:
            argv += ["--keymap", self.keymap]
        return argv

    def app_env(self) -> dict[str, str]:
        """The database travels in the environment ($MEMDESK_DB), not argv: a PostgreSQL URL holds
        a password, and every user of the machine can read every process's argv."""
        return {"MEMDESK_DB": self.db_path}

    # -- sessions ------------------------------------------------------------------------------

    # -- who is asking ------------------------------------------------------------------------

    def _via_proxy(self, request: web.Request) -> bool:
        return request.remote is not None and request.remote in self.trusted_proxies

    def client_of(self, request: web.Request) -> str:
        """The peer address; behind a trusted proxy, the address that proxy saw (the LAST
        X-Forwarded-For entry: the earlier ones are whatever the client chose to send)."""
        if self._via_proxy(request):
            forwarded = request.headers.get("X-Forwarded-For", "").split(",")[-1].strip()
            if forwarded:
                return forwarded
        return request.remote or "?"

    def scheme_of(self, request: web.Request) -> str:
        """https when this server is reached through TLS: its own, or a trusted proxy's."""
        if self._via_proxy(request):
            proto = request.headers.get("X-Forwarded-Proto", "").split(",")[-1].strip().lower()
            if proto in ("http", "https"):
                return proto
        return request.scheme

    def cookie_name(self, request: web.Request) -> str:
        return TLS_COOKIE if self.scheme_of(request) == "https" else COOKIE

    def host_allowed(self, request: web.Request) -> bool:
        """The Host header names this server: an address it binds, localhost, or --allow-host."""
        host = urlsplit(f"//{request.host}").hostname if request.host else None
        return host is not None and host.lower() in self.allowed_hosts

    def same_origin(self, request: web.Request) -> bool:
        """A browser always sends Origin on POST and on a websocket; it must name this server as the
        browser reached it, scheme AND host (the Host header, which a reverse proxy must pass
        through). A client without Origin is not a browser acting for another site."""
        origin = request.headers.get("Origin")
        if origin is None:
            return True
        parts = urlsplit(origin)
        return parts.scheme == self.scheme_of(request) and parts.netloc.lower() == request.host.lower()

    # -- sessions ------------------------------------------------------------------------------

    def session_of(self, request: web.Request) -> Session | None:
        token = request.cookies.get(self.cookie_name(request))
        session = self._sessions.get(token) if token else None
        if session is None:
            return None
        if not self._still_valid(session):
            self._sessions.pop(session.token, None)
            return None
        return session

    def _current_credentials(self) -> dict[str, str] | None:
        """The reviewers, or None while the file is invalid: then every session ends and logins
        are refused (fail closed), and the reason is logged once per change."""
        entries = self.credentials.current()
        error = self.credentials.error
        if error != self._credentials_error:
            self._credentials_error = error
            if error:
                log.error("credentials file invalid, every session ended and logins refused: %s", error)
            else:
                log.warning("credentials file valid again: logins accepted")
        if error:
            self._sessions.clear()
            return None
        return entries

    def _still_valid(self, session: Session) -> bool:
        entries = self._current_credentials()
        return (
            entries is not None
            and session.expires > self.clock()
            and entries.get(session.reviewer) == session.credential
        )

    def _new_session(self, reviewer: str, credential: str) -> Session:
        now = self.clock()
        for token in [t for t, s in self._sessions.items() if s.expires <= now]:
            del self._sessions[token]
        session = Session(
            secrets.token_urlsafe(32), secrets.token_urlsafe(32), reviewer, credential, now + self.session_seconds
        )
        self._sessions[session.token] = session
        return session

    async def _close_sockets(self, predicate: Callable[[Session], bool], why: str) -> None:
        for ws, session in list(self._sockets.items()):
            if predicate(session):
                await ws.close(message=why.encode("utf-8"))

    def _why_ended(self, session: Session) -> str:
        """What the page shows when a workstation is closed under its reviewer."""
        if self._credentials_error:
            return "the credentials file is invalid; ask the operator"
        if session.expires <= self.clock():
            return "the session expired; log in again"
        if session.reviewer not in self.credentials.current():
            return f"reviewer {session.reviewer} was removed"
        return "the password changed; log in again"

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            for ws, session in list(self._sockets.items()):
                if not self._still_valid(session):
                    await ws.close(message=self._why_ended(session).encode("utf-8"))

    # -- the application -----------------------------------------------------------------------

    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=16 * 1024)
        app.add_routes(
            [
                web.get("/login", self._login_form),
                web.post("/login", self._login),
                web.post("/logout", self._logout),
                web.get("/", self._page),
                web.get("/ws", self._websocket),
                web.get("/memdesk.js", self._asset(_JS, "text/javascript")),
                web.get("/login.js", self._asset(_LOGIN_JS, "text/javascript")),
                web.get("/memdesk.css", self._asset(_CSS, "text/css")),
                web.static("/static", STATIC_DIR, show_index=False, follow_symlinks=False),
            ]
        )
        app.on_response_prepare.append(self._headers)
        app.on_startup.append(self._start_sweeper)
        app.on_shutdown.append(self._shutdown)
        return app

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Every route but the login form needs a valid session; the page redirects to the form,
        everything else (websocket, static files, unknown paths) answers 401. A Host that is not
        this server's is refused first (DNS rebinding: evil.test resolving to 127.0.0.1)."""
        if not self.host_allowed(request):
            log.warning("refused a request for Host %r from %s", request.host, self.client_of(request))
            raise web.HTTPMisdirectedRequest(
                text=f"refused: Host {request.host!r} is not this server (memdesk serve --allow-host NAME adds one)"
            )
        if request.path not in ("/login", "/login.js"):
            session = self.session_of(request)
            if session is None:
                if request.method == "GET" and request.path == "/":
                    raise web.HTTPSeeOther("/login")
                raise web.HTTPUnauthorized(text="log in first: /login")
            request[SESSION] = session
        return await handler(request)

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        for name, value in _SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)

    async def _start_sweeper(self, app: web.Application) -> None:
        self._sweeper = asyncio.create_task(self._sweep())
        self._refill()

    def _refill(self) -> None:
        """Start spares until WARM_SPARES wait (in the background: a login never waits for it)."""
        if self._refilling is None or self._refilling.done():
            self._refilling = asyncio.create_task(self._start_spares())

    async def _start_spares(self) -> None:
        self._spares = [p for p in self._spares if p.alive]
        while len(self._spares) < self.warm_spares:
            spare = WorkstationProcess(self.warm_command(), env=self.app_env())
            try:
                await spare.spawn()
            except OSError as exc:
                log.error("could not start a workstation ahead of time: %s", exc)
                return
            self._spares.append(spare)

    def _take_spare(self) -> WorkstationProcess | None:
        while self._spares:
            spare = self._spares.pop(0)
            if spare.alive:
                return spare
        return None

    async def _shutdown(self, app: web.Application) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._refilling is not None:
            self._refilling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refilling
        await self._close_sockets(lambda s: True, "the server is shutting down")
        # Each workstation quits (releasing its lease) before the server goes: none is orphaned.
        spares, self._spares = self._spares, []
        await asyncio.gather(*(app.stop() for app in [*self._apps, *spares]))

    @staticmethod
    def _asset(text: str, content_type: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(text=text, content_type=content_type)

        return handler

    def _login_page(self, error: str = "", name: str = "", status: int = 200) -> web.Response:
        body = _LOGIN_PAGE.format(  # says nothing about the database: the visitor is anonymous
            error=f'<p class="error" id="error">{html.escape(error)}</p>' if error else "",
            name=html.escape(name, quote=True),
        )
        return web.Response(text=body, content_type="text/html", status=status)

    async def _login_form(self, request: web.Request) -> web.StreamResponse:
        if self.session_of(request) is not None:
            raise web.HTTPSeeOther("/")
        return self._login_page()

    async def _login(self, request: web.Request) -> web.StreamResponse:
        if not self.same_origin(request):
            raise _origin_refused(request, self.scheme_of(request))
        form = await request.post()
        name, password = form.get("name"), form.get("password")
        if not isinstance(name, str) or not isinstance(password, str):
            return self._login_page("Enter your reviewer name and password.", status=400)
        name = name.strip()
        client = self.client_of(request)
        entries = self._current_credentials()
        if entries is None:
            return self._login_page(
                "Logins are closed: the credentials file is invalid (see the server's log).", name, status=503
            )
        # Decided and counted here, before the hash and with no await in between: a burst cannot
        # slip more attempts past the limit than a slow series would.
        wait = self.throttle.admit(client, name)
        if wait > 0:
            log.warning("login for %r from %s refused: throttled after repeated failures", name, client)
            return self._login_page(f"Too many failed attempts; try again in {int(wait) + 1} s.", name, status=429)
        stored = entries.get(name) if NAME_PATTERN.fullmatch(name) else None
        ok = await self._check(password, stored)
        if ok is None:
            return self._login_page("The server is busy; try again in a moment.", name, status=503)
        if not (ok and stored):
            log.warning("failed login for %r from %s", name, client)
            return self._login_page("Wrong reviewer name or password.", name, status=401)
        self.throttle.succeeded(client, name)
        session = self._new_session(name, stored)
        log.info("%s logged in from %s", name, client)
        response = web.Response(text=_LOGGED_IN_PAGE.format(proof=session.proof), content_type="text/html")
        secure = self.scheme_of(request) == "https"
        response.set_cookie(
            self.cookie_name(request),
            session.token,
            httponly=True,
            samesite="Strict",
            secure=secure,
            path="/",
            max_age=int(self.session_seconds),
        )
        return response

    async def _check(self, password: str, stored: str | None) -> bool | None:
        """scrypt (~50 ms of CPU) off the event loop, so open workstations keep drawing, with at
        most SCRYPT_LANES checks for known names at once and ONE lane for unknown names (which
        hash a decoy, so that a wrong name costs what a wrong password costs): a flood of made-up
        names queues behind itself, not in front of a reviewer. None: too many unknown names wait."""
        if stored is not None:
            async with self._known_lane:
                return await asyncio.to_thread(verify_password, password, stored)
        if self._decoy_waiting >= DECOY_QUEUE:
            return None
        self._decoy_waiting += 1
        try:
            async with self._decoy_lane:
                return await asyncio.to_thread(verify_password, password, self._decoy)
        finally:
            self._decoy_waiting -= 1

    async def _logout(self, request: web.Request) -> web.StreamResponse:
        if not self.same_origin(request):
            raise _origin_refused(request, self.scheme_of(request))
        session = request[SESSION]
        self._sessions.pop(session.token, None)
        await self._close_sockets(lambda s: s.token == session.token, "you logged out")
        log.info("%s logged out", session.reviewer)
        response = _redirect("/login")
        response.del_cookie(self.cookie_name(request), path="/")
        return response

    async def _page(self, request: web.Request) -> web.StreamResponse:
        session = request[SESSION]
        body = _WORKSTATION_PAGE.format(reviewer=html.escape(session.reviewer), db=html.escape(self.shown_db))
        return web.Response(text=body, content_type="text/html")

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        """One workstation process per websocket, for the session's reviewer. Only the terminal
        size is read from the query string."""
        session = request[SESSION]
        if not self.same_origin(request):
            raise _origin_refused(request, self.scheme_of(request))
        if sum(s.reviewer == session.reviewer for s in self._sockets.values()) >= MAX_APPS_PER_REVIEWER:
            raise web.HTTPTooManyRequests(text=f"at most {MAX_APPS_PER_REVIEWER} open workstations per reviewer")
        ws = web.WebSocketResponse(heartbeat=15, max_msg_size=64 * 1024)
        self._sockets[ws] = session
        app: WorkstationProcess | None = None
        try:
            await ws.prepare(request)
            if not await self._proven(ws, session):
                log.warning("websocket for %s refused: no matching session proof", session.reviewer)
                await ws.close(message=b"this browser did not log in on this page's origin; log in again")
                return ws
            width = _clamp(request.query.get("width"), MIN_COLS, MAX_COLS, 80)
            height = _clamp(request.query.get("height"), MIN_ROWS, MAX_ROWS, 24)
            app = self._take_spare()
            if app is not None:
                self._apps.add(app)
                await app.begin(ws.send_bytes, ws.close, reviewer=session.reviewer, width=width, height=height)
                log.info("workstation (started ahead) handed to %s", session.reviewer)
            else:
                app = WorkstationProcess(
                    self.app_command(session.reviewer), ws.send_bytes, ws.close, env=self.app_env()
                )
                self._apps.add(app)
                await app.start(width, height)
                log.info("workstation started for %s", session.reviewer)
            self._refill()  # the next session finds one ready
            await self._relay(ws, app)
        finally:
            self._sockets.pop(ws, None)
            if app is not None:
                await app.stop()
                self._apps.discard(app)
                log.info("workstation closed for %s", session.reviewer)
        return ws

    @staticmethod
    async def _proven(ws: web.WebSocketResponse, session: Session) -> bool:
        """The first message must be ["proof", P] with the session's proof: what the login gave
        the page and the page kept in origin-scoped storage. A cookie alone (which any port of the
        same host receives, and can plant) opens nothing."""
        try:
            message = await ws.receive(timeout=PROOF_SECONDS)
            envelope = json.loads(message.data) if message.type == WSMsgType.TEXT else None
        except (TimeoutError, ValueError):
            return False
        return (
            isinstance(envelope, list)
            and len(envelope) == 2
            and envelope[0] == "proof"
            and isinstance(envelope[1], str)
            and hmac.compare_digest(envelope[1].encode("utf-8"), session.proof.encode("utf-8"))
        )

    @staticmethod
    async def _relay(ws: web.WebSocketResponse, app: WorkstationProcess) -> None:
        """Browser -> app: keystrokes, sizes, focus. Anything else, or anything malformed, is dropped."""
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await app.keys(data)
            elif kind == "resize" and isinstance(data, dict):
                await app.meta(
                    type="resize",
                    width=_clamp(data.get("width"), MIN_COLS, MAX_COLS, 80),
                    height=_clamp(data.get("height"), MIN_ROWS, MAX_ROWS, 24),
                )
            elif kind == "ping":
                await ws.send_json(["pong", str(data)[:32]])
            elif kind in ("blur", "focus"):
                await app.meta(type=kind)

    # -- running -------------------------------------------------------------------------------

    async def serve(self, host: str, port: int, ready: Callable[[str], None]) -> None:
        """Listen on host:port (0: any free port) until SIGINT/SIGTERM; `ready` gets the URL."""
        runner = web.AppRunner(self.make_app(), handle_signals=False, access_log=None)
        await runner.setup()
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            sock.close()
            await runner.cleanup()
            raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from None
        await web.SockSite(runner, sock).start()
        bound_host, bound_port = sock.getsockname()[:2]
        self.allowed_hosts |= {host.lower().strip("[]"), bound_host.lower()}
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        ready(f"http://{shown}:{bound_port}/")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await runner.cleanup()
