"""What keeps one server alive under what its users send it: escaping, workers, stops,
model stores, upload caps.

- plain(text): user text made safe for Streamlit's Markdown (captions, notes, errors).
- worker(): at most HEAVY_WORKERS heavy computations at a time, first come, first served
  and one per session (Line), the place in line shown while waiting; long work hands its
  slot to the next in line between its pieces (core.interrupt.turn).
- install_stop_check(): long library loops stop (core.interrupt) once their session has
  gone, the script was asked to stop, or the server is shutting down.
- text models: counts and decoders in stores bounded by bytes (ByteLRU, which the other
  server-wide stores use too): the default corpus's in one store per server process
  (web.server.once, out of reach of clear-cache), those trained on a user's text in that
  session's state, going with it.
- session_uploads(): a session keeps at most SESSION_UPLOADS files / SESSION_UPLOAD_BYTES.
"""

from __future__ import annotations

import inspect
import itertools
import pickle
import re
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from functools import wraps

import streamlit as st

from ..core import interrupt
from ..text.corpus import Corpus, CorpusError
from ..text.ngram import NGramCounts, train
from ..text.pair import TextDecoder
from ..views.work import WORK_STOP_S, ByteLRU
from . import server, stcontract

HEAVY_WORKERS = 2  # heavy computations at once, across all sessions (one per core here)
SHARED_MODEL_BYTES = 256 * 2**20  # models of the default corpus, shared by every session
SESSION_MODEL_BYTES = 160 * 2**20  # models of one session's own text
SESSION_RESULT_BYTES = 64 * 2**20  # results computed from one session's own text
SESSION_UPLOADS = 6  # files one session's uploads may hold on the server
SESSION_UPLOAD_BYTES = 12 * 2**20

# ----------------------------------------------------------------------------- markdown
PLAIN_MAX_CHARS = 1_000  # the longest user-facing text plain() passes on (messages echo input)
WORD_JOINER = "\u2060"  # invisible, zero width: splits a pattern without changing the text
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~$@&])")  # links, images, HTML, code, LaTeX, ...
# Patterns the browser finds in the text itself after parsing (so a backslash does not stop
# them): GFM autolinks (scheme://, www., name@host), emoji shortcodes (:smile:), Material
# icons (:material/home:) and colour, badge and size directives (:red[...]).
_TEXT_PATTERN = re.compile(r"(?i)(?<=:)(?=\S)|(?<=@)|(?<=www)(?=\.)")
_BLOCK_START = re.compile(r"^(\s*\d*)([-+=>.)])")  # a list, heading rule or quote
_SPACES = re.compile(r"\s+")


def plain(text: object) -> str:
    """text as literal Markdown for st.markdown / caption / info / error: the marks that
    make links, images, HTML, entities, code, emphasis or LaTeX backslash-escaped, a word
    joiner after every ':' and '@' and inside 'www.' (no autolink, emoji, icon or colour
    directive can form), line breaks as spaces (so no block starts inside it), and at most
    PLAIN_MAX_CHARS characters of it (then how long it was)."""
    t = _SPACES.sub(" ", str(text))
    if len(t) > PLAIN_MAX_CHARS:
        t = f"{t[:PLAIN_MAX_CHARS]}… ({len(t):,} characters in all)"
    t = _TEXT_PATTERN.sub(WORD_JOINER, _MD_SPECIAL.sub(r"\\\1", t))
    return _BLOCK_START.sub(lambda m: f"{m[1]}\\{m[2]}", t)


# ----------------------------------------------------------------------------- workers
class Line:
    """`slots` heavy jobs at once across all sessions, handed out first come, first served,
    one per session: a session's next job waits for its running one without holding up
    the visitors behind it. Each job waiting has a ticket; it may start when a slot is free
    and it is among the first `free` tickets of sessions with nothing running (the first
    ticket of each such session counts)."""

    def __init__(self, slots: int) -> None:
        self.slots = self.free = int(slots)
        self.waiting: list[tuple[int, Hashable]] = []  # (ticket, session), in arrival order
        self.running: dict[Hashable, int] = {}  # session -> its jobs running (0 or 1)
        self.cond = threading.Condition()
        self._tickets = itertools.count()

    def _ahead(self, ticket: int) -> int:
        """Jobs that start before this ticket's (under the lock); -1 when it is not in line."""
        seen, order = set(), []
        for t, who in self.waiting:
            if who not in seen and not self.running.get(who):
                order.append(t)
            seen.add(who)
        return order.index(ticket) if ticket in order else len(self.waiting)

    def others_waiting(self, session: Hashable) -> bool:
        """Whether another session's job waits, with no slot free for it."""
        with self.cond:
            return self.free == 0 and any(who != session for _, who in self.waiting)

    def take(self, session: Hashable, *, wait: Callable[[], object] = lambda: None,
             shown: Callable[[int], object] = lambda ahead: None) -> None:
        """Wait for a slot in line (shown(jobs ahead) when that changes; wait() between
        looks: a stop check), then hold it."""
        with self.cond:
            ticket = next(self._tickets)
            self.waiting.append((ticket, session))
        told = None
        try:
            while True:
                with self.cond:
                    ahead = self._ahead(ticket)
                    if ahead < self.free:
                        self.waiting.remove((ticket, session))
                        self.free -= 1
                        self.running[session] = self.running.get(session, 0) + 1
                        return
                    self.cond.wait(0.2)
                if ahead != told:
                    shown(ahead)
                    told = ahead
                wait()
        except BaseException:
            with self.cond:
                if (ticket, session) in self.waiting:
                    self.waiting.remove((ticket, session))
                self.cond.notify_all()
            raise

    def give(self, session: Hashable) -> None:
        """Let a slot go."""
        with self.cond:
            self.free += 1
            self.running[session] -= 1
            if not self.running[session]:
                del self.running[session]
            self.cond.notify_all()


_LINE = Line(HEAVY_WORKERS)
_held = threading.local()
WAIT_NOTE = ("Waiting for a free worker: the server runs at most {n} heavy computations at "
             "once, first come, first served, one per visitor. {ahead} This one starts as "
             "soon as its turn comes.")


def _session() -> Hashable:
    """This script run's session, or (no script: a test, the CLI) its thread."""
    ctx = stcontract.script_ctx()
    return ctx.session_id if ctx is not None else ("thread", threading.get_ident())


def _ahead_text(ahead: int) -> str:
    return "Yours is next." if ahead == 0 else \
        f"{ahead} job{'s' if ahead > 1 else ''} of other visitors {'are' if ahead > 1 else 'is'} " \
        "ahead of yours."


@contextmanager
def worker() -> Iterator[None]:
    """Hold one of HEAVY_WORKERS slots for the block, taken in line (Line); while waiting,
    say so on the page with the jobs ahead, and stop if the session goes. Long work in the
    block lets the next visitor's job go first at its turn points (core.interrupt.turn)."""
    if getattr(_held, "slot", False):  # already holding one: nested heavy work
        yield
        return
    session, note = _session(), [None]

    def shown(ahead: int) -> None:
        with _not_recorded():
            if note[0] is None:
                note[0] = st.empty()
            note[0].info(WAIT_NOTE.format(n=HEAVY_WORKERS, ahead=_ahead_text(ahead)))

    holding = [False]

    def take() -> None:
        _LINE.take(session, wait=interrupt.check, shown=shown)
        holding[0] = True
        if note[0] is not None:
            with _not_recorded():
                note[0].empty()

    def turn() -> None:  # between pieces of long work: the next in line first
        if _LINE.others_waiting(session):
            holding[0] = False
            _LINE.give(session)
            take()

    take()
    _held.slot = True
    try:
        with interrupt.turns(turn):
            yield
    finally:
        _held.slot = False
        if holding[0]:  # (a stop while waiting for its turn again holds none)
            _LINE.give(session)
        server.ended()


@contextmanager
def _not_recorded() -> Iterator[None]:
    """Elements drawn in the block are not replayed with a cached result (the wait note
    belongs to this run only)."""
    with stcontract.not_replayed():
        yield


def gated(fn: Callable) -> Callable:
    """fn itself, or, when views marked it heavy (views.work.heavy), fn run in a worker
    under the request's time budget (core.interrupt.budget: past WORK_STOP_S its loops stop
    with what they have done, or say why not)."""
    if not getattr(fn, "heavy", False):
        return fn

    @wraps(fn)
    def run(*args, **kwargs):
        with worker(), interrupt.budget(WORK_STOP_S):
            return fn(*args, **kwargs)
    return run


# ----------------------------------------------------------------------------- stops
def _stop_requested(ctx) -> bool:
    try:
        return stcontract.stop_requested(ctx)
    except AttributeError:  # a context without requests (a test's)
        return False


def _runtime_gone(session_id: str) -> bool:
    try:
        return stcontract.runtime_gone(session_id)
    except RuntimeError:  # the runtime went between the two looks
        return False


def install_stop_check() -> None:
    """Long loops of this script run stop (StopException, as Streamlit's own stop) once the
    session has gone, a stop was asked for, or the server is shutting down."""
    ctx = stcontract.script_ctx()
    if ctx is None:
        interrupt.install(None)
        return
    session_id = ctx.session_id

    def hook() -> bool:
        if _stop_requested(ctx) or _runtime_gone(session_id):
            raise stcontract.stop()
        return False

    interrupt.install(hook)


# ----------------------------------------------------------------------------- models
def _session_store(name: str, max_bytes: int) -> ByteLRU:
    return st.session_state.setdefault(f"_guard_{name}", ByteLRU(max_bytes))


def _models(private: bool) -> ByteLRU:
    """This session's store of its own text's models, or the default corpus's: one store per
    server process (web.server.once), which no client's clear-cache message can empty."""
    if private:
        return _session_store("models", SESSION_MODEL_BYTES)
    return server.once("shared text models", lambda: ByteLRU(SHARED_MODEL_BYTES))


def text_counts(corpus: Corpus, level: str, max_order: int) -> NGramCounts:
    """The counts of corpus at level up to max_order, trained once (in a worker) and kept:
    a user's text in this session's store, the default corpus in the shared one. Text that
    cannot make a model raises CorpusError with the reason."""
    private = corpus.source == "user"

    def make() -> NGramCounts:
        with worker(), st.spinner("Counting n-grams…"):
            try:
                counts = train(corpus.text, level, int(max_order))
            except ValueError as exc:
                raise CorpusError(f"It cannot make a model at this level and order: {exc}.") \
                    from None
        counts.private = private
        return counts
    return _models(private).get_or_make(("counts", corpus.fingerprint, level, int(max_order)),
                                        make, lambda counts: counts.nbytes)


def text_decoder(counts: NGramCounts, target: int, draft: int, T_p: float,
                 T_q: float) -> TextDecoder:
    """The decoder over counts (kept beside them, sized by what its row caches may hold)."""
    private = bool(getattr(counts, "private", False))
    store = _models(private)
    key = ("decoder", counts.fingerprint, int(target), int(draft), float(T_p), float(T_q))
    dec = store.get_or_make(key, lambda: TextDecoder(counts, target, draft, T_p, T_q),
                            lambda d: d.max_cache_bytes)
    dec.private = private
    return dec


def private(args: tuple, kwargs: dict) -> bool:
    """Whether any argument is (or holds: a scenario's pair, a pair's decoder, its counts) a
    model of a session's own text."""
    objs = [*args, *kwargs.values()]
    for _ in range(4):
        if any(getattr(obj, "private", False) for obj in objs):
            return True
        objs = [getattr(obj, name, None) for obj in objs
                for name in ("pair", "dec", "counts")]
    return False


def session_memo(fn: Callable, args: tuple, kwargs: dict):
    """fn(*args, **kwargs) kept in this session's bounded store (keyed by the arguments
    Streamlit would hash: those not named with a leading underscore)."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    shown = sorted((k, repr(v)) for k, v in bound.arguments.items() if not k.startswith("_"))
    key = (fn.__module__, fn.__qualname__, tuple(shown))
    return _session_store("results", SESSION_RESULT_BYTES).get_or_make(
        key, lambda: fn(*args, **kwargs), _pickled_size)


def _pickled_size(value: object) -> int:
    """The bytes of value pickled; past the store's size where it cannot be measured (used,
    not kept)."""
    try:
        return len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        return SESSION_RESULT_BYTES + 1


# ----------------------------------------------------------------------------- uploads
def session_uploads(keep: set[str]) -> None:
    """Hold this session's uploaded files on the server to SESSION_UPLOADS files and
    SESSION_UPLOAD_BYTES: files no widget uses now (`keep`: the file ids in use) go first,
    oldest first. Streamlit keeps every file a client sends until the session ends."""
    ctx = stcontract.script_ctx()
    held = stcontract.upload_storage(ctx)
    if ctx is None or held is None:
        return
    mgr, storage = held
    files = dict(storage.get(ctx.session_id, {}))
    total = sum(len(f.data) for f in files.values())
    for file_id, rec in list(files.items()):  # insertion order: oldest first
        if len(files) <= SESSION_UPLOADS and total <= SESSION_UPLOAD_BYTES:
            break
        if file_id in keep:
            continue
        mgr.remove_file(ctx.session_id, file_id)
        files.pop(file_id)
        total -= len(rec.data)


def uploads_in_use() -> set[str]:
    """The file ids this session's upload widgets hold now."""
    out = set()
    for value in st.session_state.to_dict().values():
        for f in value if isinstance(value, list) else [value]:
            file_id = getattr(f, "file_id", None)
            if isinstance(file_id, str):
                out.add(file_id)
    return out
