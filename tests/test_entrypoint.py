"""The container, checked without Docker: the image's exact entry command and health check.

Docker cannot build here (no daemon), so the Dockerfile's CMD and HEALTHCHECK are parsed
and run as they are, from the repository root (only the port is moved to a free one), and
the static promises of the Dockerfile, .dockerignore, .streamlit/config.toml and deploy/ are
read and checked. A change to any of them that breaks the container breaks this test.
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
def test_base_image_is_a_slim_python_311_or_newer():
    (base,) = _all("FROM")
    m = re.fullmatch(r"python:3\.(\d+)(?:\.\d+)?-slim(?:-\w+)?(?:@sha256:[0-9a-f]{64})?", base)
    assert m and int(m[1]) >= 11, base


def test_requirements_are_pinned_and_installed():
    lines = [ln.split("#")[0].strip() for ln in (ROOT / "requirements.txt").read_text()
             .splitlines()]
    reqs = [ln for ln in lines if ln]
    assert reqs and all(re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[\w.]+", r) for r in reqs), reqs
    assert any("requirements.txt" in a for a in _all("COPY"))
    assert any("pip install" in a and "-r requirements.txt" in a for a in _all("RUN"))


def test_runs_as_a_non_root_user():
    users = _all("USER")
    assert users and users[-1] not in ("root", "0", "0:0"), users
    # the user is created before it is used
    assert any("useradd" in a or "adduser" in a for a in _all("RUN"))


def test_exposes_8501_and_checks_health_without_curl():
    assert str(IMAGE_PORT) in " ".join(_all("EXPOSE")).split()
    (check,) = _all("HEALTHCHECK")
    assert "curl" not in check and "wget" not in check
    argv = image_healthcheck()
    assert argv[:2] == ["python", "-c"] and "urllib" in argv[2], argv
    assert f":{IMAGE_PORT}/_stcore/health" in argv[2]


def test_cmd_is_streamlit_headless_on_all_interfaces():
    argv = image_cmd()
    assert argv[:3] == ["streamlit", "run", "app.py"], argv
    assert "--server.headless=true" in argv
    assert "--server.address=0.0.0.0" in argv
    assert f"--server.port={IMAGE_PORT}" in argv


def test_image_copies_everything_the_app_needs():
    copied = " ".join(_all("COPY"))
    for path in ("app.py", "pages/", "specviz/", ".streamlit/"):
        assert path in copied, f"the Dockerfile does not COPY {path}"
        assert (ROOT / path).exists(), path
    ignore = (ROOT / ".dockerignore").read_text()
    for path in ("app.py", "pages/", "specviz/", ".streamlit/", "requirements.txt"):
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
    # every option named exists in this streamlit
    for section, options in cfg.items():
        for name in options:
            assert f"{section}.{name}" in config._config_options_template, f"{section}.{name}"


def test_upload_caps_of_the_app_fit_under_the_server_cap():
    """Every upload the app promises to take gets through the server; nothing bigger does."""
    import importlib

    from specviz.web import ui

    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    server_cap = cfg["server"]["maxUploadSize"] * 2**20  # Streamlit's MB
    caps = [ui.UPLOAD_MAX_BYTES]
    try:
        caps.append(importlib.import_module("specviz.text.corpus").MAX_BYTES)  # /text uploads
    except ModuleNotFoundError:
        pass
    assert max(caps) <= server_cap < 2 * max(caps) + 2**20, (caps, server_cap)


# ----------------------------------------------------------------------------- deploy/
def test_kubernetes_manifests_do_what_the_readme_says():
    deploy = ROOT / "deploy"
    text = {p.name: p.read_text() for p in deploy.glob("*.yaml")}
    dep, svc, ing = text["deployment.yaml"], text["service.yaml"], text["ingress.yaml"]
    assert "kind: Deployment" in dep and "kind: Service" in svc and "kind: Ingress" in ing
    replicas = int(re.search(r"replicas:\s*(\d+)", dep)[1])
    assert replicas >= 2
    # one shared cookie secret for every replica, from a Secret
    assert "STREAMLIT_SERVER_COOKIE_SECRET" in dep and "secretKeyRef" in dep
    assert "/_stcore/health" in dep and str(IMAGE_PORT) in dep
    assert "runAsNonRoot: true" in dep
    # sticky sessions and WebSocket upgrades through the ingress
    assert 'affinity: "cookie"' in ing
    assert "proxy-read-timeout" in ing and "proxy-send-timeout" in ing
    assert "sessionAffinity: ClientIP" in svc
    # the Secret the Deployment reads is the one the example creates
    secret_name = re.search(r"secretKeyRef:\s*\n\s*name:\s*(\S+)", dep)[1]
    assert f"name: {secret_name}" in text["secret.example.yaml"]
    resources = re.findall(r"^\s*-\s*(\S+)", text["kustomization.yaml"], re.M)
    assert {"deployment.yaml", "service.yaml", "ingress.yaml"} <= set(resources)
    assert "secret.example.yaml" not in resources  # never deploy the sample secret


# ----------------------------------------------------------------------------- live
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
