"""The container, checked without Docker: the image's exact entry command and health check.

Docker cannot build here (no daemon), so the Dockerfile's CMD and HEALTHCHECK are parsed
and run as they are, from the repository root (only the port is moved to a free one), and
the static promises of the Dockerfile, .dockerignore and .streamlit/config.toml are read and
checked (deploy/ and the locks: tests/test_deploy.py). A change to any of them that breaks
the container breaks this test.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from harness import (  # noqa: E402
    IMAGE_PORT,
    dockerfile_instructions,
    free_port,
    health,
    image_cmd,
    image_healthcheck,
    localise,
    start_server,
)

INSTR = dockerfile_instructions()


def _all(name: str) -> list[str]:
    return [args for instr, args in INSTR if instr == name]


# ----------------------------------------------------------------------------- Dockerfile
def test_base_image_is_a_slim_python_311_on_a_named_debian_release():
    (base,) = _all("FROM")
    m = re.fullmatch(r"python:3\.(\d+)(?:\.\d+)?-slim-(bookworm|trixie)(?:@sha256:[0-9a-f]{64})?",
                     base)
    assert m and int(m[1]) >= 11, base


def test_the_lock_is_installed_with_its_hashes():
    assert any(a.split()[0] == "requirements.lock" for a in _all("COPY"))
    assert any("pip install" in a and "--require-hashes" in a and "-r requirements.lock" in a
               for a in _all("RUN"))


def test_runs_as_a_numeric_non_root_user():
    users = _all("USER")
    assert users and users[-1] == "10001:10001", users
    # the user is created before it is used
    assert any("useradd" in a and "--uid 10001" in a for a in _all("RUN"))


def test_exposes_8501_and_checks_health_without_curl():
    assert str(IMAGE_PORT) in " ".join(_all("EXPOSE")).split()
    (check,) = _all("HEALTHCHECK")
    assert "curl" not in check and "wget" not in check
    argv = image_healthcheck()
    assert argv[:2] == ["python", "-c"] and "urllib" in argv[2], argv
    assert f":{IMAGE_PORT}/_stcore/health" in argv[2]


def test_cmd_is_streamlit_headless_on_all_interfaces():
    """`streamlit run app.py` through specviz.web.server (what Streamlit has no option for)."""
    argv = image_cmd()
    assert argv[:5] == ["python", "-m", "specviz.web.server", "run", "app.py"], argv
    assert "--server.headless=true" in argv
    assert "--server.address=0.0.0.0" in argv
    assert f"--server.port={IMAGE_PORT}" in argv


def test_image_copies_everything_the_app_needs():
    copied = " ".join(_all("COPY"))
    for path in ("app.py", "pages/", "specviz/", ".streamlit/"):
        assert path in copied, f"the Dockerfile does not COPY {path}"
        assert (ROOT / path).exists(), path
    ignore = (ROOT / ".dockerignore").read_text()
    for path in ("app.py", "pages/", "specviz/", ".streamlit/", "requirements.lock"):
        assert f"!{path}" in ignore, f".dockerignore does not let {path} through"


# ----------------------------------------------------------------------------- config.toml
def test_streamlit_config_is_hardened():
    import streamlit.config as config

    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    server, client, browser = cfg["server"], cfg["client"], cfg["browser"]
    assert server["enableXsrfProtection"] is True
    assert "enableCORS" not in server  # CORS protection stays at its default (on)
    assert config._config_options_template["server.enableCORS"].default_val is True
    assert 1 <= server["maxUploadSize"] <= 8  # MB: small
    assert server["runOnSave"] is False
    assert server["fileWatcherType"] == "none"
    assert client["toolbarMode"] == "viewer"
    assert client["showErrorDetails"] in ("type", "none")  # no messages, no tracebacks
    assert client["showErrorDetails"] in {o.value for o in config.ShowErrorDetailsConfigOptions}
    assert browser["gatherUsageStats"] is False
    assert cfg["runner"]["postScriptGC"] is False  # no full collection after every step
    # every option named exists in this streamlit
    for section, options in cfg.items():
        for name in options:
            assert f"{section}.{name}" in config._config_options_template, f"{section}.{name}"


def test_upload_caps_of_the_app_fit_under_the_server_cap():
    """Every upload the app promises to take gets through the server; nothing bigger does."""
    import importlib

    from specviz.web import tableedit

    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    server_cap = cfg["server"]["maxUploadSize"] * 2**20  # Streamlit's MB
    caps = [tableedit.UPLOAD_MAX_BYTES]
    try:
        caps.append(importlib.import_module("specviz.text.corpus").MAX_BYTES)  # /text uploads
    except ModuleNotFoundError:
        pass
    assert max(caps) <= server_cap < 2 * max(caps) + 2**20, (caps, server_cap)


# ----------------------------------------------------------------------------- live
@pytest.mark.slow  # over 2 s on a quiet core (tests/conftest.py)
def test_entry_command_serves_and_its_health_check_passes():
    """Run the CMD verbatim (only the port moved; it listens on 0.0.0.0 as in the image),
    probe /_stcore/health, run the HEALTHCHECK command itself, and see it fail after."""
    port = free_port()
    srv = start_server(port=port, address=None)  # address None: keep --server.address=0.0.0.0
    try:
        assert "--server.address=0.0.0.0" in srv.argv
        assert srv.argv[1:] == localise(image_cmd(), port)[1:]
        assert health(srv.url)
        check = localise(image_healthcheck(), port)
        assert subprocess.run(check, timeout=30).returncode == 0
        import urllib.request

        with urllib.request.urlopen(srv.url + "/", timeout=10) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
    finally:
        srv.stop()
    assert subprocess.run(check, timeout=30, capture_output=True).returncode != 0
    log = srv.log()
    assert "Traceback" not in log, log


@pytest.mark.parametrize("flag", ["--server.headless=true", "--server.address=0.0.0.0"])
def test_localise_changes_only_the_port(flag):
    argv = image_cmd()
    out = localise(argv, 12345, address=None)
    assert flag in out
    assert [a for a in out if a not in argv] == [out[0], "--server.port=12345"]
