"""Start and stop a real specviz server with the Docker image's own entry command.

The command is parsed from the Dockerfile (its exec-form CMD and HEALTHCHECK), so the tests,
the entry-point check and benchmarks/load.py all run what the container runs. Only the port
(and, where asked, the listening address) is swapped. Used by tests/e2e/conftest.py,
tests/test_entrypoint.py and benchmarks/load.py.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
CHROMIUM = "/usr/bin/chromium"
# A page is done when the script has finished, the socket is up, and nothing is lazy or stale.
IDLE = ("[data-testid='stApp'][data-test-script-state='notRunning']"
        "[data-test-connection-state='CONNECTED']")
SETTLED_JS = ("() => !document.querySelector('[data-testid=stSkeleton]')"
              " && !document.querySelector('[data-stale=true]')")
OVERFLOW_JS = ("() => { const m = document.querySelector('[data-testid=stMain]');"
               " return [m.scrollWidth, m.clientWidth, document.documentElement.scrollWidth,"
               " document.documentElement.clientWidth]; }")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
IMAGE_PORT = 8501  # the port the Dockerfile's CMD, EXPOSE and HEALTHCHECK use


def dockerfile_instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs of a Dockerfile, continuation lines joined."""
    out, buf = [], ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):  # a comment inside a continued instruction
            continue
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def _exec_form(args: str, what: str) -> list[str]:
    """A JSON exec-form array: ["streamlit", "run", ...]."""
    try:
        argv = json.loads(args)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"the Dockerfile's {what} is not in JSON exec form: {args}") from exc
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv), args
    return argv


def image_cmd(path: Path = DOCKERFILE) -> list[str]:
    """The Dockerfile's CMD, verbatim (the last one wins, as in Docker)."""
    cmds = [a for i, a in dockerfile_instructions(path) if i == "CMD"]
    assert cmds, "the Dockerfile has no CMD"
    return _exec_form(cmds[-1], "CMD")


def image_healthcheck(path: Path = DOCKERFILE) -> list[str]:
    """The HEALTHCHECK's command (after its --options and the word CMD), verbatim."""
    checks = [a for i, a in dockerfile_instructions(path) if i == "HEALTHCHECK"]
    assert checks, "the Dockerfile has no HEALTHCHECK"
    _, sep, cmd = checks[-1].partition(" CMD ")
    if not sep and checks[-1].startswith("CMD "):
        cmd = checks[-1][4:]
    assert cmd, f"cannot find the command of HEALTHCHECK {checks[-1]!r}"
    return _exec_form(cmd.strip(), "HEALTHCHECK")


def image_env(path: Path = DOCKERFILE) -> dict[str, str]:
    """ENV key=value pairs of the Dockerfile."""
    env = {}
    for instr, args in dockerfile_instructions(path):
        if instr == "ENV":
            for tok in shlex.split(args):
                key, _, value = tok.partition("=")
                env[key] = value
    return env


def localise(argv: list[str], port: int, address: str | None = None) -> list[str]:
    """The image's command for this checkout: the venv's executables, a free port, and
    optionally another listening address. Nothing else changes."""
    bindir = Path(sys.executable).parent
    out = []
    for i, a in enumerate(argv):
        if i == 0 and (bindir / a).exists():
            a = str(bindir / a)
        elif i == 0 and a in ("python", "python3"):
            a = sys.executable
        a = a.replace(f"--server.port={IMAGE_PORT}", f"--server.port={port}")
        a = a.replace(f":{IMAGE_PORT}/", f":{port}/")
        if address is not None and a.startswith("--server.address="):
            a = f"--server.address={address}"
        out.append(a)
    assert any(str(port) in a for a in out), (
        f"the command must name port {IMAGE_PORT} so it can be moved: {argv}")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def health(url: str, timeout: float = 2.0) -> bool:
    """True when Streamlit's health endpoint answers 200 ok."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=timeout) as r:
            return r.status == 200 and r.read().strip() == b"ok"
    except (urllib.error.URLError, OSError, TimeoutError):
        return False


@dataclass
class Server:
    """A running `streamlit run app.py` from the Dockerfile's CMD."""

    proc: subprocess.Popen
    port: int
    argv: list[str]
    log_path: Path
    started_s: float = 0.0  # seconds from spawn to a healthy endpoint
    _log: object = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        if self._log is not None:
            self._log.close()
            self._log = None


def start_server(port: int | None = None, address: str | None = "127.0.0.1",
                 timeout_s: float = 60.0, env: dict[str, str] | None = None,
                 base: str = "") -> Server:
    """Spawn the image's CMD from the repository root and wait until /_stcore/health is ok
    (under the URL path base: server.baseUrlPath, when given)."""
    port = port or free_port()
    if base:
        env = {**(env or {}), "STREAMLIT_SERVER_BASE_URL_PATH": base}
    argv = localise(image_cmd(), port, address)
    log_path = Path(tempfile.mkstemp(prefix="specviz-server-", suffix=".log")[1])
    log = open(log_path, "w")  # closed by Server.stop
    full_env = {**os.environ, **image_env(), **(env or {})}
    full_env.pop("STREAMLIT_SERVER_PORT", None)
    proc = subprocess.Popen(argv, cwd=ROOT, env=full_env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    server = Server(proc, port, argv, log_path, _log=log)
    t0 = time.monotonic()
    while not health(server.url + (f"/{base}" if base else ""), timeout=1.0):
        if proc.poll() is not None:
            server.stop()
            raise RuntimeError(f"the server exited with {proc.returncode}:\n{server.log()}")
        if time.monotonic() - t0 > timeout_s:
            server.stop()
            raise RuntimeError(f"no healthy server after {timeout_s:.0f} s:\n{server.log()}")
        time.sleep(0.1)
    server.started_s = time.monotonic() - t0
    return server


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM) in MB, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/<pid>/status")
