"""What a non-browser client can send a real server: Streamlit's protobuf messages over a
WebSocket with no Origin and no XSRF token, and frames whose header claims any length.
"""

from __future__ import annotations

import base64
import os
import socket
import time
from contextlib import contextmanager

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

STREAM = "/_stcore/stream"


@contextmanager
def session(port: int):
    """A Streamlit session of a raw client (no Origin, no XSRF token, no cookies)."""
    with connect(f"ws://127.0.0.1:{port}{STREAM}", subprotocols=["streamlit"],
                 max_size=None, open_timeout=30) as ws:
        yield ws


def send(ws, **fields) -> None:
    """One BackMsg: send(ws, clear_cache=True)."""
    msg = BackMsg()
    for name, value in fields.items():
        if isinstance(value, bool):
            setattr(msg, name, value)
        else:
            getattr(msg, name).CopyFrom(value)
    ws.send(msg.SerializeToString())


def run_script(ws, page: str = "", query: str = "", timeout_s: float = 180.0,
               pressed: str = "", buttons: dict | None = None,
               alerts: list | None = None) -> float:
    """Ask for a script run of a page (its URL name; "" the home page) with this query (and
    the button of widget id `pressed` pressed); seconds until the server said it finished
    (the server's time, no browser's). buttons, if given, gets label -> widget id of each
    button the run drew; alerts the text of each alert (info, warning, error)."""
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = page
    if pressed:
        msg.rerun_script.widget_states.widgets.add(id=pressed, trigger_value=True)
    t0 = time.monotonic()
    ws.send(msg.SerializeToString())
    while time.monotonic() - t0 < timeout_s:
        fwd = ForwardMsg()
        fwd.ParseFromString(ws.recv(timeout=timeout_s))
        kind = fwd.WhichOneof("type")
        if kind == "page_not_found":
            raise LookupError(f"no page {page!r}")
        if kind == "script_finished":
            return time.monotonic() - t0
        if buttons is not None and kind == "delta" and \
                fwd.delta.WhichOneof("type") == "new_element" and \
                fwd.delta.new_element.WhichOneof("type") == "button":
            b = fwd.delta.new_element.button
            buttons[b.label] = b.id
        if alerts is not None and kind == "delta" and \
                fwd.delta.WhichOneof("type") == "new_element" and \
                fwd.delta.new_element.WhichOneof("type") == "alert":
            alerts.append(fwd.delta.new_element.alert.body)
    raise TimeoutError("no script_finished")


def press(ws, page: str, query: str, label: str, timeout_s: float = 180.0) -> float:
    """Run the page, then press the button whose label starts with `label` (as a click
    does: the same query, that button's trigger); seconds the pressed run took."""
    buttons: dict[str, str] = {}
    run_script(ws, page, query, timeout_s, buttons=buttons)
    ids = [wid for text, wid in buttons.items() if text.startswith(label)]
    if not ids:
        raise LookupError(f"no button {label!r} on {page!r}: {sorted(buttons)}")
    return run_script(ws, page, query, timeout_s, pressed=ids[0])


def _handshake(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {STREAM} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: streamlit\r\n\r\n"
               ).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError(f"no handshake answer: {head!r}")
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head[:80]
    return s


def garbage_frame(port: int, payload: bytes) -> None:
    """Open a session and send one binary frame that is no BackMsg, then close."""
    s = _handshake(port)
    try:
        s.sendall(bytes([0x82, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
        time.sleep(0.05)
    finally:
        s.close()


def big_frame(port: int, length: int, chunk: int = 2**20) -> tuple[int, str]:
    """Open a session and send one binary frame of `length` zero bytes (masked with a zero
    key), streamed in chunks, so the client holds one chunk only. Returns (the bytes the
    server took before closing the connection, the close code it sent or 'none')."""
    s = _handshake(port)
    s.sendall(bytes([0x82, 0x80 | 127]) + length.to_bytes(8, "big") + b"\0\0\0\0")
    sent, zeros = 0, bytes(chunk)
    try:
        while sent < length:
            sent += s.send(zeros[: min(chunk, length - sent)])
    except OSError:
        pass
    try:
        s.settimeout(30)
        return sent, _close_code(s)
    except OSError:
        return sent, "none"
    finally:
        s.close()


def _close_code(s: socket.socket) -> str:
    """Read the server's frames (unmasked) until its close frame; its code, or 'none'."""
    buf = b""

    def take(n: int) -> bytes:
        nonlocal buf
        while len(buf) < n:
            part = s.recv(65536)
            if not part:
                raise ConnectionError("closed")
            buf += part
        out, buf = buf[:n], buf[n:]
        return out

    try:
        while True:
            b0, b1 = take(2)
            n = b1 & 0x7F
            if n >= 126:
                n = int.from_bytes(take(2 if n == 126 else 8), "big")
            payload = take(n)
            if b0 & 0x0F == 0x8:  # close
                return str(int.from_bytes(payload[:2], "big")) if n >= 2 else "none"
    except ConnectionError:
        return "none"


__all__ = ["ConnectionClosed", "big_frame", "run_script", "send", "session"]
