"""Every part of Streamlit that specviz uses outside its documented API, named once here.

Streamlit keeps no promise about these names; an upgrade may move or drop any of them. Each
is declared in PRIVATE with what specviz does with it, and check() looks each one up when the
server starts (web.server: main() and the first script run): the first one missing stops the
start with its name and its use, instead of a feature going quietly away (a clear-cache that
empties every session's caches again, a stop button that no longer stops a long loop). A name
specviz replaces must also still be read by the Streamlit code that calls it (`read_by`), or
the replacement would do nothing.

A name is "module:Attr.attr"; "module:Class().attr" is an attribute each instance gets (set
in Class.__init__, or a dataclass field). The browser side (the data-testid values, class
names and attributes the app's style sheets and scripts select, and the settings
web.basehref writes) is in FRONTEND and the assets' selectors, checked against the installed
Streamlit's static files (check_frontend; tests/web/test_stcontract.py runs both in a fresh
process). The rest of specviz imports Streamlit only as `streamlit as st` (the layers test).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import re
import types
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from . import assets

READ_FOR = "1.67.0"  # the Streamlit version these names were read from


class StreamlitChanged(RuntimeError):
    """The installed Streamlit lacks a name specviz relies on."""


@dataclass(frozen=True)
class Private:
    name: str  # "module:Attr.attr" or "module:Class().attr"
    use: str  # what specviz does with it, where
    read_by: str = ""  # Streamlit's function that must still read the name specviz replaces


CLEAR_CACHE = "streamlit.runtime.app_session:AppSession._handle_clear_cache_request"
SESSION_STATE = "streamlit.runtime.app_session:AppSession()._session_state"
RUNTIME = "streamlit.runtime:Runtime"
SESSION_MGR = "streamlit.runtime.runtime:Runtime()._session_mgr"
LIST_SESSIONS = "streamlit.runtime.session_manager:SessionManager.list_sessions"
RUNTIME_STATE = "streamlit.runtime.runtime:RuntimeState"
ACTIVE_SESSION = "streamlit.runtime.runtime:Runtime.is_active_session"
APP_FACTORY = "streamlit.web.server.starlette.starlette_server:create_starlette_app"
UVICORN_SETTINGS = "streamlit.web.server.starlette.starlette_server:_get_uvicorn_config_kwargs"
SERVE = "streamlit.web.server.starlette.starlette_server:UvicornServer.start"
CLI = "streamlit.web.cli:main"
WS_LOGGER = "streamlit.web.server.starlette.starlette_websocket:_LOGGER"
QUERY_SANITIZE = "streamlit.runtime.app_session:sanitize_query_string"
QUERY_MAX_CHARS = "streamlit.runtime.state.query_params:CLIENT_STATE_QUERY_STRING_MAX_LENGTH"
QUERY_MAX_FIELDS = "streamlit.runtime.state.query_params:CLIENT_STATE_QUERY_STRING_MAX_FIELDS"
SCRIPT_CTX = "streamlit.runtime.scriptrunner:get_script_run_ctx"
CTX_REQUESTS = ("streamlit.runtime.scriptrunner_utils.script_run_context:"
                "ScriptRunContext().script_requests")
CTX_SESSION = ("streamlit.runtime.scriptrunner_utils.script_run_context:"
               "ScriptRunContext().session_id")
CTX_UPLOADS = ("streamlit.runtime.scriptrunner_utils.script_run_context:"
               "ScriptRunContext().uploaded_file_mgr")
REQUEST_STATE = "streamlit.runtime.scriptrunner_utils.script_requests:ScriptRequests()._state"
REQUEST_TYPE = "streamlit.runtime.scriptrunner_utils.script_requests:ScriptRequestType.STOP"
STOP_EXCEPTION = "streamlit.runtime.scriptrunner_utils.exceptions:StopException"
REPLAY_FLAG = "streamlit.runtime.caching.cached_message_replay:in_cached_function"
UPLOAD_STORAGE = ("streamlit.runtime.memory_uploaded_file_manager:"
                  "MemoryUploadedFileManager().file_storage")
UPLOAD_REMOVE = ("streamlit.runtime.memory_uploaded_file_manager:"
                 "MemoryUploadedFileManager.remove_file")
MANIFEST_SCAN = "streamlit.components.v2.manifest_scanner:scan_component_manifests"

PRIVATE = (
    Private(CLEAR_CACHE, "web.server: a client's clear-cache message clears its own session "
            "state only, not the caches every session shares", read_by=(
                "streamlit.runtime.app_session:AppSession.handle_backmsg")),
    Private(SESSION_STATE, "web.server: what the refused clear-cache still clears"),
    Private(RUNTIME, "web.server, web.guard: the process's runtime (Runtime.instance())"),
    Private(SESSION_MGR, "web.server: the idle collector counts the sessions held"),
    Private(LIST_SESSIONS, "web.server: the idle collector counts the sessions held"),
    Private(RUNTIME_STATE, "web.guard: long loops stop while the server shuts down"),
    Private(ACTIVE_SESSION, "web.guard: long loops stop once their session has gone"),
    Private(APP_FACTORY, "web.server: the app wrapped (metrics closed, web.basehref)",
            read_by=SERVE),
    Private(UVICORN_SETTINGS, "web.server: request heads up to 2 MiB", read_by=SERVE),
    Private(CLI, "web.server: `python -m specviz.web.server run app.py` is `streamlit run`"),
    Private(WS_LOGGER, "web.server: a raw client's garbage frame logs one line, rate-limited"),
    Private(QUERY_SANITIZE, "web.server: a query Streamlit leaves out gets the app's note",
            read_by="streamlit.runtime.app_session:AppSession.request_rerun"),
    Private(QUERY_MAX_CHARS, "web.server: the note says the longest query Streamlit reads"),
    Private(QUERY_MAX_FIELDS, "web.server: the note says how many parameters it reads"),
    Private(SCRIPT_CTX, "web.guard: the script run's session, stop requests and uploads"),
    Private(CTX_REQUESTS, "web.guard: whether the script was asked to stop"),
    Private(CTX_SESSION, "web.guard: the script run's session"),
    Private(CTX_UPLOADS, "web.guard: a session's uploads held to a few files"),
    Private(REQUEST_STATE, "web.guard: whether the script was asked to stop (the stop button)"),
    Private(REQUEST_TYPE, "web.guard: whether the script was asked to stop (the stop button)"),
    Private(STOP_EXCEPTION, "web.guard: long loops stop as Streamlit's own stop does"),
    Private(REPLAY_FLAG, "web.guard: the wait note is not replayed with a cached result"),
    Private(UPLOAD_STORAGE, "web.guard: a session's uploads held to a few files"),
    Private(UPLOAD_REMOVE, "web.guard: a session's uploads held to a few files"),
    Private(MANIFEST_SCAN, "tests/conftest.py: components scanned once per test run"),
)
BY_NAME = {p.name: p for p in PRIVATE}

# The browser's side, beyond the assets' own selectors (assets.selectors()): where the app's
# scripts read the run's state, and where web.basehref names the server's base.
FRONTEND = ("data-test-script-state", "notRunning", "running", "rerunRequested", "data-stale",
            "st-key-", "__streamlit", "BACKEND_BASE_URL")


# ----------------------------------------------------------------------------- looking up
def _missing(name: str, why: str) -> StreamlitChanged:
    use = BY_NAME[name].use if name in BY_NAME else "specviz"
    return StreamlitChanged(f"Streamlit has no {name} ({why}); specviz relies on it ({use}). "
                            f"These names were read from Streamlit {READ_FOR}: see "
                            "specviz/web/stcontract.py.")


def _split(name: str) -> tuple[str, list[str], str | None]:
    """(module, attribute path to a class or object, instance attribute or None)."""
    module, _, path = name.partition(":")
    head, sep, inst = path.partition("().")
    return module, head.split("."), (inst if sep else None)


def _instance_attrs(cls: type) -> set[str]:
    """The attributes Class.__init__ sets on self (or its dataclass fields)."""
    names = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        code = getattr(init, "__code__", None)
        if code is not None:
            names |= set(code.co_names)
    return names


def get(name: str) -> object:
    """The object a "module:Attr.attr" name names (StreamlitChanged, naming it, where
    it is missing). An instance attribute's name gives the class that sets it."""
    module, path, inst = _split(name)
    try:
        obj: object = importlib.import_module(module)
    except ImportError as exc:
        raise _missing(name, f"no module {module}: {exc}") from None
    for part in path:
        if not hasattr(obj, part):
            raise _missing(name, f"no {part} in {getattr(obj, '__name__', obj)}")
        obj = getattr(obj, part)
    if inst is not None and inst not in _instance_attrs(obj):  # type: ignore[arg-type]
        raise _missing(name, f"{path[-1]}.__init__ no longer sets {inst}")
    return obj


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _check_read(p: Private) -> None:
    reader = get(p.read_by)
    attr = _split(p.name)[1][-1]
    if attr not in _code_names(reader.__code__):  # type: ignore[attr-defined]
        raise _missing(p.name, f"{p.read_by} no longer reads {attr}, so replacing it would "
                       "do nothing")


def owner(name: str) -> tuple[object, str]:
    """(the module or class that holds the name, the attribute's name), checked."""
    module, path, _ = _split(name)
    get(name)
    holder = get(f"{module}:{'.'.join(path[:-1])}") if len(path) > 1 else \
        importlib.import_module(module)
    return holder, path[-1]


def replace(name: str, value: object) -> None:
    """Streamlit's name replaced by value (after checking that it is there and, where
    PRIVATE says which of Streamlit's functions calls it, still read there)."""
    if BY_NAME[name].read_by:
        _check_read(BY_NAME[name])
    setattr(*owner(name), value)


# ----------------------------------------------------------------------------- uses
def script_ctx():
    """The running script's context (None outside a script run)."""
    return get(SCRIPT_CTX)()  # type: ignore[operator]


def session_count() -> int:
    """Sessions the runtime holds (connected, or disconnected and not yet expired); 0 where
    no runtime runs (AppTest, the CLI)."""
    runtime = get(RUNTIME)
    if not runtime.exists():  # type: ignore[attr-defined]
        return 0
    return len(runtime.instance()._session_mgr.list_sessions())  # type: ignore[attr-defined]


def stop_requested(ctx) -> bool:
    """Whether this script run was asked to stop (the stop button, a new run)."""
    req = ctx.script_requests
    return req is not None and req._state == get(REQUEST_TYPE)


def runtime_gone(session_id: str) -> bool:
    """Whether the server is shutting down or the session has gone."""
    runtime, state = get(RUNTIME), get(RUNTIME_STATE)
    if not runtime.exists():  # type: ignore[attr-defined]
        return False
    rt = runtime.instance()  # type: ignore[attr-defined]
    return (rt.state in (state.STOPPING, state.STOPPED)  # type: ignore[attr-defined]
            or not rt.is_active_session(session_id))


def stop() -> BaseException:
    """The exception that stops a script run as Streamlit's own stop does."""
    return get(STOP_EXCEPTION)()  # type: ignore[operator]


@contextlib.contextmanager
def not_replayed() -> Iterator[None]:
    """Elements drawn in the block are not recorded for a cached function's replay."""
    flag = get(REPLAY_FLAG)
    token = flag.set(False)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        flag.reset(token)  # type: ignore[attr-defined]


def upload_storage(ctx) -> tuple[object, dict] | None:
    """(the uploaded-file manager, its storage: session id -> file id -> file) of the script
    run, or None where there is none (AppTest)."""
    mgr = getattr(ctx, "uploaded_file_mgr", None)
    storage = getattr(mgr, "file_storage", None)
    return None if storage is None else (mgr, storage)


# ----------------------------------------------------------------------------- checks
def check() -> None:
    """Every name in PRIVATE is there (and read where specviz replaces it);
    StreamlitChanged names the first one missing."""
    for p in PRIVATE:
        get(p.name)
        if p.read_by:
            _check_read(p)


def static_js() -> Path:
    """The installed Streamlit's folder of frontend scripts."""
    import streamlit

    return Path(streamlit.__file__).parent / "static" / "static" / "js"


_WORD = re.compile(r"[\w$-]")  # a character that would make a name part of a longer one


@cache
def _frontend_text() -> str:
    return "\n".join(f.read_text(encoding="utf-8", errors="replace")
                     for f in sorted(static_js().glob("*.js")))


def frontend_has(name: str) -> bool:
    """Whether Streamlit's frontend writes name as a whole word (a string, an attribute, a
    property): "stMain", "data-stale"; a name ending in a suffix ("stBaseButton-primary")
    may be written as a template ("stBaseButton-${kind}")."""
    text = _frontend_text()
    at = text.find(name)
    while at >= 0:
        before, after = text[at - 1:at], text[at + len(name):at + len(name) + 1]
        if not _WORD.match(before) and not _WORD.match(after):
            return True
        at = text.find(name, at + 1)
    head, dash, _ = name.rpartition("-")
    return bool(dash) and f"`{head}-${{" in text


def check_frontend() -> list[str]:
    """The browser-side names the app selects or reads that Streamlit's frontend no longer
    writes (an empty list when all are there)."""
    return [n for n in (*assets.selectors(), *FRONTEND) if not frontend_has(n)]
