"""The person's part of a login: show them the authorization URL, get the redirect back. Blocking.

Three ways, chosen by the ``login=`` option of :class:`~mcpsync.OAuth`:

* ``"browser"``: open the system browser and catch the redirect with a
  one-shot HTTP server on ``127.0.0.1`` (a random port unless the redirect URI
  names one). The server runs on the waiting thread: no extra thread.
* ``"paste"``: print the URL; the person opens it anywhere, approves, and
  pastes back the address their browser was sent to (for notebooks and SSH).
* a callable ``fn(authorization_url) -> redirect_url``: the application does
  it its own way.

``"auto"`` picks paste in a notebook kernel, over SSH or without a display,
and the browser otherwise. Every wait ends at the login timeout (a pasted
answer in a notebook excepted: interrupt the kernel), or early when the
request that needed the login is abandoned.
"""

from __future__ import annotations

import abc
import logging
import os
import select
import socket
import sys
import threading
import time
import webbrowser
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Callable, Dict, Optional, Union
from urllib.parse import parse_qsl, urlsplit

from .._terminal import shown
from ..exceptions import AuthError
from ._urls import check_url, is_loopback

__all__ = ["LoginHandler", "Person", "parse_redirect", "person_for"]

log = logging.getLogger("mcpsync.auth")

LoginHandler = Callable[[str], str]
"""The application's login: gets the authorization URL, returns the URL the server redirected to."""

CALLBACK_PATH = "/callback"
_POLL = 0.25
_PAGE = ("<!doctype html><html><head><meta charset='utf-8'><title>mcpsync</title></head>"
         "<body style='font-family:sans-serif;margin:3em'><h2>{title}</h2><p>{text}</p></body></html>")


def parse_redirect(text: str) -> Dict[str, str]:
    """The query parameters of a redirect URL (or of a bare ``code=...&state=...`` string)."""
    text = text.strip()
    query = urlsplit(text).query if "://" in text else text.lstrip("?")
    return dict(parse_qsl(query, keep_blank_values=True))


class Person(abc.ABC):
    """One login's conversation with the person. Use it in a ``with`` block.

    ``redirect_uri`` is fixed when the object is made (the loopback server is
    already listening), so a client can be registered for it first.
    """

    redirect_uri: str

    def __enter__(self) -> "Person":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        """Release what the conversation holds (the loopback socket). Idempotent."""

    @abc.abstractmethod
    def authorize(self, url: str, state: str, deadline: float, abort: Optional[threading.Event]) -> str:
        """Have the person approve at ``url``; return the redirect URL (its query holds ``code`` and ``state``).

        Raises:
            AuthError: ``login_timeout`` at ``deadline`` (``time.monotonic()``),
                ``login_abandoned`` when ``abort`` is set, ``login_failed`` when
                the person's side failed.
        """


def person_for(login: Union[str, LoginHandler], *, open_browser: Optional[Callable[[str], Any]],
               redirect_uri: Optional[str], preferred: Optional[str]) -> Person:
    """The conversation for one login.

    ``redirect_uri`` is the user's fixed one; ``preferred`` one registered
    before (its port is tried first by the loopback server).

    Raises:
        AuthError: ``no_person`` when ``"auto"`` finds nobody to ask (no
            browser, no terminal); ``unsafe_url`` for a bad redirect URI.
    """
    if callable(login):
        return _Delegate(login, redirect_uri or preferred or _free_loopback_uri())
    mode = _chosen_mode() if login == "auto" else login
    if mode == "browser":
        return _Loopback(open_browser or webbrowser.open, redirect_uri, preferred)
    if mode == "paste":
        return _Paste(redirect_uri or preferred or _free_loopback_uri())
    raise ValueError(f"login must be 'auto', 'browser', 'paste' or a callable, not {login!r}")


def _chosen_mode() -> str:
    """What ``login="auto"`` means here: a browser, or a pasted URL (raising when nobody can paste it)."""
    mode = _auto_mode()
    if mode == "paste" and not _can_ask():
        raise AuthError("An interactive OAuth login is needed, but there is no browser and no terminal to "
                        "ask in: log in once interactively with the same token store, or use "
                        "mcpsync.ClientCredentials for a job without a person", error="no_person")
    return mode


def _auto_mode() -> str:
    if "ipykernel" in sys.modules:
        return "paste"  # the kernel may run on another machine than the browser
    if any(os.environ.get(name) for name in ("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY")):
        return "paste"
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return "paste"
    return "browser"


def _can_ask() -> bool:
    if "ipykernel" in sys.modules:
        return True
    stdin = sys.stdin
    try:
        return stdin is not None and stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _free_loopback_uri() -> str:
    """A loopback redirect URI on a port nothing listens on now (for paste and callables)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{CALLBACK_PATH}"


def _loopback_parts(uri: str) -> "tuple[int, str]":
    parts = urlsplit(check_url(uri, "redirect URI"))
    if parts.scheme != "http" or not is_loopback(parts.hostname):
        raise AuthError(f"The browser login needs an http://127.0.0.1 redirect URI, not {uri!r}", error="unsafe_url")
    return parts.port or 80, parts.path or "/"


def _check_deadline(deadline: float, abort: Optional[threading.Event]) -> float:
    if abort is not None and abort.is_set():
        raise AuthError("The login was abandoned: the request that needed it has ended", error="login_abandoned")
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise AuthError("No login was completed in time (login_timeout)", error="login_timeout")
    return remaining


def _tell(text: str, end: str = "\n") -> None:
    """Show the person something (stderr: stdout may be a script's data).

    ``text`` may quote what an authorization server sent (its authorization URL): it passes the
    output gate, so no control sequence in it reaches the terminal.
    """
    stream = sys.stderr
    if stream is not None:
        print(shown(text, lines=True), file=stream, end=end, flush=True)


class _Delegate(Person):
    def __init__(self, handler: LoginHandler, redirect_uri: str) -> None:
        self._handler = handler
        self.redirect_uri = redirect_uri

    def authorize(self, url: str, state: str, deadline: float, abort: Optional[threading.Event]) -> str:
        try:
            answer = self._handler(url)
        except AuthError:
            raise
        except Exception as exc:
            raise AuthError(f"The login handler raised {type(exc).__name__}: {exc}", error="login_failed") from exc
        if not isinstance(answer, str) or not answer:
            raise AuthError("The login handler must return the redirect URL (a string)", error="login_failed")
        return answer


class _Paste(Person):
    def __init__(self, redirect_uri: str) -> None:
        self.redirect_uri = redirect_uri

    def authorize(self, url: str, state: str, deadline: float, abort: Optional[threading.Event]) -> str:
        _tell("To authorize access to the MCP server, open this URL in a browser and approve:\n\n"
              f"    {url}\n\n"
              f"Your browser is then sent to {self.redirect_uri}?...; that page may fail to load, which is "
              "expected.\nCopy the whole address from the browser's address bar and paste it here.")
        while True:
            answer = _read_line("Redirect URL: ", deadline, abort)
            if "code" in parse_redirect(answer) or "error" in parse_redirect(answer):
                return answer
            _tell("That does not look like the redirect URL (it has no code=...); try again.")


def _read_line(prompt: str, deadline: float, abort: Optional[threading.Event]) -> str:
    stdin = sys.stdin
    if stdin is None:
        raise AuthError("No terminal to read the redirect URL from", error="no_person")
    fileno = _waitable_fileno(stdin)
    if fileno < 0:  # a notebook or a pipe: input() has no timeout
        return _input_line(prompt)
    _tell(prompt, end="")
    while True:
        remaining = _check_deadline(deadline, abort)
        ready, _, _ = select.select([fileno], [], [], min(remaining, _POLL))
        if ready:
            line = stdin.readline()
            if not line:
                raise AuthError("No redirect URL was pasted (end of input)", error="login_failed")
            return line


def _waitable_fileno(stdin: Any) -> int:
    """The descriptor of a POSIX terminal ``stdin`` that select() can wait on; -1 for anything else."""
    try:
        if os.name == "posix" and stdin.isatty() and "ipykernel" not in sys.modules:
            return int(stdin.fileno())
    except (AttributeError, ValueError, OSError):
        pass
    return -1


def _input_line(prompt: str) -> str:
    """A line read by input(), which cannot time out (a notebook, a pipe)."""
    try:
        if "ipykernel" in sys.modules:
            return input(prompt)  # the notebook shows the prompt by its input box
        _tell(prompt, end="")
        return input()
    except EOFError as exc:
        raise AuthError("No redirect URL was pasted (end of input)", error="login_failed") from exc


class _CallbackServer(HTTPServer):
    """A one-shot server for the redirect: the first request to ``path`` with our ``state`` wins."""

    def __init__(self, port: int, path: str) -> None:
        super().__init__(("127.0.0.1", port), _CallbackHandler)
        self.path = path
        self.state: Optional[str] = None
        self.result: Optional[str] = None

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("The login callback server could not answer %s", client_address, exc_info=True)


class _CallbackHandler(BaseHTTPRequestHandler):
    server: _CallbackServer
    timeout = 5  # a browser's idle pre-connection must not hold the waiting thread for long

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        parts = urlsplit(self.path)
        if parts.path != self.server.path:
            self._answer(404, "Not found", "This is mcpsync's login callback.")
            return
        params = parse_redirect(parts.query)
        if self.server.state is None or params.get("state") != self.server.state:
            self._answer(400, "Unexpected login response", "This page is not the answer to the login in progress.")
            return
        self.server.result = f"http://127.0.0.1:{self.server.server_port}{self.path}"
        if "error" in params:
            self._answer(200, "Login refused", "The authorization server refused; see your application.")
        else:
            self._answer(200, "Login complete", "You can close this window and return to your application.")

    def _answer(self, status: int, title: str, text: str) -> None:
        body = _PAGE.format(title=title, text=text).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # the request line holds the authorization code: never log it


class _Loopback(Person):
    def __init__(self, open_browser: Callable[[str], Any], redirect_uri: Optional[str],
                 preferred: Optional[str]) -> None:
        self._open_browser = open_browser
        if redirect_uri is not None:
            port, path = _loopback_parts(redirect_uri)
            self._server = self._listen(port, path, strict=True)
        else:
            port, path = 0, CALLBACK_PATH
            if preferred is not None:
                try:
                    port, path = _loopback_parts(preferred)
                except AuthError:
                    port, path = 0, CALLBACK_PATH
            self._server = self._listen(port, path, strict=False)
        bound = self._server.server_address[1]
        self.redirect_uri = redirect_uri or f"http://127.0.0.1:{bound}{self._server.path}"

    @staticmethod
    def _listen(port: int, path: str, strict: bool) -> _CallbackServer:
        try:
            return _CallbackServer(port, path)
        except OSError as exc:
            if strict or port == 0:
                raise AuthError(f"Cannot listen on 127.0.0.1:{port} for the login redirect: {exc.strerror or exc}",
                                error="login_failed") from exc
            log.info("Port %d is busy; the login redirect uses another port", port)
            return _CallbackServer(0, CALLBACK_PATH)

    def close(self) -> None:
        self._server.server_close()

    def authorize(self, url: str, state: str, deadline: float, abort: Optional[threading.Event]) -> str:
        server = self._server
        server.state = state
        try:
            opened = bool(self._open_browser(url))
        except Exception as exc:
            log.info("Could not open a browser: %s", exc)
            opened = False
        if opened:
            _tell(f"Your browser has been opened to log in. If it did not open, visit:\n    {url}")
        else:
            _tell(f"Open this URL in a browser on this machine to log in:\n    {url}")
        while server.result is None:
            server.timeout = min(_check_deadline(deadline, abort), _POLL)
            server.handle_request()
        return server.result
