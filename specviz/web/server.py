"""The server process: what lives once per process, what no client may do to it, and the
entry command of the image.

- once(name, make): an object made once per server process and kept for its life, outside
  Streamlit's caches. Any client can send Streamlit's clear-cache message (the toolbar only
  hides its button), which empties st.cache_data and st.cache_resource for every session;
  what is kept here it cannot reach. For the models every session shares: the default
  corpus and the n-gram store here (web.guard, web.textmodels), a real model loaded once
  per server (call once() from a web module with the lower layer's loader).
- install(): at every script run (idempotent). A client's clear-cache message clears its
  own session state only, not the caches every session shares; and a collector thread runs
  a full garbage collection (and returns freed heap to the system) once the server has
  been quiet for COLLECT_QUIET_S ($SPECVIZ_COLLECT_QUIET_S, default 5) after scripts ran,
  heavy jobs ended (ended()) or sessions ended (Streamlit's collection after every script
  run is off: [runner] postScriptGC = false).
- main(): `python -m specviz.web.server run app.py ...` is `streamlit run app.py ...` with
  /_stcore/metrics answered 404, SECURITY_HEADERS on every response, request heads up to
  REQUEST_HEAD_MAX_BYTES, which Streamlit 1.67 has no option for, the page's document
  naming the server's base (web.basehref), a client's bad frames logged in one line,
  rate-limited (OneLine), a query Streamlit leaves out noted (query_left_out), and SIGTERM
  ending the process within STOP_GRACE_S.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from specviz.web import stcontract
from specviz.web.basehref import BaseHref

T = TypeVar("T")
# seconds without a script run or a session change before the collector collects
COLLECT_QUIET_S = float(os.environ.get("SPECVIZ_COLLECT_QUIET_S", "5"))
CLOSED_PATHS = ("/_stcore/metrics",)  # answered 404 (the proxy closes them too)
# Chromium sends URLs up to 2 MiB; uvicorn's h11 default (16 KiB per incomplete read) resets
# request lines past ~125 KB before the app can say what it left out of them.
REQUEST_HEAD_MAX_BYTES = 2 * 2**20 + 64 * 2**10
# Sent with every HTTP response, so the image and the Space (no proxy in front) send what
# deploy/proxy/nginx.conf and deploy/kubernetes/httproute.yaml do (tests/test_deploy.py
# holds the three equal): no page of this app may be framed, no script from elsewhere.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; style-src "
        "'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "
        "connect-src 'self'; worker-src 'self' blob:; media-src 'self' data: blob:; "
        "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
STOP_GRACE_S = 0.5  # after SIGTERM, what the server may take to stop before it exits anyway
QUERY_DROPPED = "specviz_query_dropped"  # what a query Streamlit left out becomes: its length
LOG_EVERY_S = 10.0  # a client's bad message is logged once per this long, in one line
_HEADER_BYTES = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]

# ----------------------------------------------------------------------------- once
_made: dict[str, object] = {}
_making: dict[str, threading.Lock] = {}
_lock = threading.Lock()


def once(name: str, make: Callable[[], T]) -> T:
    """The process's object under name: make() the first time (once, however many sessions
    ask at the same moment; the others wait for it), the same object after that."""
    try:
        return _made[name]  # type: ignore[return-value]
    except KeyError:
        pass
    with _lock:
        gate = _making.setdefault(name, threading.Lock())
    with gate:
        if name not in _made:
            _made[name] = make()
        return _made[name]  # type: ignore[return-value]


def made(name: str) -> bool:
    """Whether once(name, ...) has made its object in this process."""
    return name in _made


# ----------------------------------------------------------------------------- install
_runs = [0]  # script runs started in this process (install() counts them)
_jobs = [0]  # heavy jobs ended in this process (ended() counts them)
_installed = threading.Event()


def install() -> None:
    """Refuse the shared part of clear-cache and start the idle collector (once per
    process); count this script run."""
    _runs[0] += 1
    if _installed.is_set():
        return
    with _lock:
        if _installed.is_set():
            return
        stcontract.check()  # under a bare `streamlit run` too (Community Cloud)
        _refuse_shared_clear()
        threading.Thread(target=_collect_when_quiet, name="specviz-collector",
                         daemon=True).start()
        _installed.set()


def ended() -> None:
    """A heavy job has ended (web.guard's worker): the collector collects once the server
    is quiet after it, as after a script run. A job of minutes ends long after its script
    run started, when the collector has already collected for that run: without this the
    memory the job let go stayed until the next visitor came."""
    _jobs[0] += 1


def _own_state_only(self) -> None:
    """A client's clear-cache message: the sender's own session state, nothing shared."""
    self._session_state.clear()


def _refuse_shared_clear() -> None:
    stcontract.replace(stcontract.CLEAR_CACHE, _own_state_only)


def _sessions() -> int:
    """Sessions the runtime holds (connected, or disconnected and not yet expired)."""
    try:
        return stcontract.session_count()
    except (stcontract.StreamlitChanged, AttributeError, RuntimeError):
        return 0


def _trim() -> None:
    """Give the C heap's free pages back to the system (glibc; elsewhere nothing)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def collect() -> None:
    """A full collection, then the heap trimmed."""
    gc.collect()
    _trim()


def expire() -> int:
    """Drop what the process's stores (once) hold unused past their idle time (ByteLRU's
    expire: /llm's streams); how many values went."""
    return sum(obj.expire() for obj in list(_made.values())
               if callable(getattr(obj, "expire", None)))


def _collect_when_quiet(stop: threading.Event | None = None) -> None:
    """Collect once the server has been quiet for COLLECT_QUIET_S after something happened
    (a script run, a heavy job ended, a session came or went), and whenever the stores
    let values go unused past their idle time; until stop is set."""
    seen, collected = None, None
    while stop is None or not stop.is_set():
        time.sleep(COLLECT_QUIET_S)
        now = (_runs[0], _jobs[0], _sessions())
        if expire() or (now == seen and now != collected):  # quiet after something
            collect()
            collected = now
        seen = now


# ----------------------------------------------------------------------------- entry
class _Closed:
    """An ASGI app that answers 404 on CLOSED_PATHS, passes everything else on and adds
    SECURITY_HEADERS to every HTTP response (where the app has not set them)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(msg) -> None:
            if msg["type"] == "http.response.start":
                have = {k.lower() for k, _ in msg.get("headers", [])}
                msg = {**msg, "headers": [*msg.get("headers", []),
                                          *[h for h in _HEADER_BYTES if h[0] not in have]]}
            await send(msg)
        if scope["path"].rstrip("/").endswith(CLOSED_PATHS):
            await secured({"type": "http.response.start", "status": 404,
                           "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
            await secured({"type": "http.response.body", "body": b"Not found\n"})
            return
        await self.app(scope, receive, secured)

    def __getattr__(self, name: str):
        return getattr(self.app, name)


class OneLine(logging.Filter):
    """A record about what a client sent: one line (its message and the exception's type
    and text, not the traceback) at most once per LOG_EVERY_S per message, saying how many
    were left out since. A raw client's garbage frames wrote Streamlit's whole traceback
    each (200 frames: 75 KB in a second)."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[str, float] = {}
        self._left: dict[str, int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info is None:
            return True
        key, now = str(record.msg), time.monotonic()
        with self._lock:
            if now - self._last.get(key, -LOG_EVERY_S) < LOG_EVERY_S:
                self._left[key] = self._left.get(key, 0) + 1
                return False
            self._last[key], left = now, self._left.pop(key, 0)
        exc = record.exc_info[1]
        record.msg = (f"{record.getMessage()}: {type(exc).__name__}: {str(exc)[:200]}"
                      + (f" ({left} more like it in the last {LOG_EVERY_S:g} s)" if left
                         else ""))
        record.args, record.exc_info, record.exc_text = (), None, None
        return True


_terminating = threading.Event()  # SIGTERM has come: the process ends without finalizing


def _exit_after(grace_s: float) -> None:
    """End the process grace_s from now, whatever is still running (a measurement's pass)."""
    def stop() -> None:
        time.sleep(grace_s)
        os.write(2, f"specviz: stopped {grace_s:g} s after SIGTERM\n".encode())
        os._exit(0)
    threading.Thread(target=stop, name="specviz-stop", daemon=True).start()


def _skip_finalizing() -> None:
    """At exit after SIGTERM: end at once (the streams flushed) instead of the interpreter's
    teardown, which frees every object of a process holding the model (1.5 GB) and took a
    second or more under load, the deadline's daemon thread already stopped by then."""
    if _terminating.is_set():
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(0)


def deadline_on_term() -> None:
    """Every SIGTERM handler set from now on (Streamlit's, uvicorn's while it serves) runs
    after arranging the process's end STOP_GRACE_S later, whatever still runs, and the
    interpreter's teardown is skipped at exit: under load a measurement's round, the
    graceful shutdown and the teardown kept the process 2-7 s after SIGTERM, and a
    container stop or a rolling update waits for it. (signal.signal is wrapped in this
    process: uvicorn sets its handler at every serve.)"""
    real = signal.signal
    if getattr(real, "deadline", False):
        return
    atexit.register(_skip_finalizing)  # registered first: runs after the other handlers

    def setting(signum, handler):
        if signum == signal.SIGTERM and callable(handler):
            graceful = handler

            def handler(num, frame) -> None:
                if not _terminating.is_set():
                    _terminating.set()
                    _exit_after(STOP_GRACE_S)
                graceful(num, frame)
        return real(signum, handler)
    setting.deadline = True
    signal.signal = setting


def query_left_out(sanitize: Callable[[str], str]) -> Callable[[str], str]:
    """Streamlit's check of a client's query (it empties one over 524,288 characters or
    1,000 parameters, with a line in the log only), made to leave a field saying so:
    QUERY_DROPPED=<its length>, which the URL's notes turn into a sentence (dropped_note)
    instead of a page silently at its defaults."""
    def checked(query: str) -> str:
        out = sanitize(query)
        return f"{QUERY_DROPPED}={len(query)}" if query and not out else out
    return checked


def dropped_note(params: dict) -> str | None:
    """The note for a query Streamlit left out (QUERY_DROPPED in params), or None."""
    if QUERY_DROPPED not in params:
        return None
    length = str(params[QUERY_DROPPED])
    length = f"{int(length):,} characters" if length.isdigit() else "too long"
    chars, fields = (int(stcontract.get(stcontract.QUERY_MAX_CHARS)),
                     int(stcontract.get(stcontract.QUERY_MAX_FIELDS)))
    return (f"The link's settings were left out: its query is {length}, and the server "
            f"reads at most {chars:,} characters and {fields:,} parameters. Every setting "
            "here is its default; a link made by the app's share box fits.")


def patch_streamlit() -> None:
    """Close CLOSED_PATHS, take request heads up to REQUEST_HEAD_MAX_BYTES and name the
    server's base in each page's document (web.basehref) in the server Streamlit starts (its
    app factory and uvicorn settings, looked up at start)."""
    make_app, settings = stcontract.get(stcontract.APP_FACTORY), \
        stcontract.get(stcontract.UVICORN_SETTINGS)
    stcontract.replace(stcontract.APP_FACTORY,
                       lambda runtime: _Closed(BaseHref(make_app(runtime))))
    stcontract.replace(stcontract.UVICORN_SETTINGS, lambda: {
        **settings(), "h11_max_incomplete_event_size": REQUEST_HEAD_MAX_BYTES})
    stcontract.get(stcontract.WS_LOGGER).addFilter(OneLine())
    if not getattr(stcontract.get(stcontract.QUERY_SANITIZE), "noted", False):
        checked = query_left_out(stcontract.get(stcontract.QUERY_SANITIZE))
        checked.noted = True
        stcontract.replace(stcontract.QUERY_SANITIZE, checked)


def main(argv: list[str] | None = None) -> None:
    """`streamlit` with argv (run app.py ...), patched as above."""
    try:
        stcontract.check()
    except stcontract.StreamlitChanged as exc:  # stop the start, naming what is missing
        raise SystemExit(f"specviz cannot start: {exc}") from None
    patch_streamlit()
    deadline_on_term()
    install()
    sys.argv = ["streamlit", *(sys.argv[1:] if argv is None else argv)]
    stcontract.get(stcontract.CLI)(prog_name="streamlit")


if __name__ == "__main__":  # run as the package's module, so the app shares its state
    from specviz.web.server import main as package_main

    package_main()
