"""A client of an OpenAI-compatible /v1/completions server, for the live audit (liveaudit).

post() sends one JSON request and reads the JSON answer; every failure is a ServerError whose
message says what happened (down, slow, an HTTP error and the server's own message, not JSON).
positions() reads the tokens of a completion in either form a server answers with:

    llama.cpp's (and specviz's own endpoint, llm.serve):
      choices[0].logprobs.content[i] = {id, token, logprob | prob,
                                         top_logprobs: [{id, token, logprob}] | top_probs: [...]}
    OpenAI's legacy completions form (vLLM and others):
      choices[0].logprobs = {tokens: [...], top_logprobs: [{token: logprob}, ...]}

Each position is a Position: its token (id when the server gives ids, else its text) and the
top tokens' probabilities the server reported there (None when it reported none).
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from dataclasses import dataclass

TIMEOUT_S = 30.0  # seconds one request may take before the server counts as slow
BODY_BYTES_MAX = 8 << 20  # bytes one answer may hold


class ServerError(RuntimeError):
    """The server cannot be audited as asked; the message says why and what to try."""


@dataclass(frozen=True)
class Position:
    """One generated position: the token and, if reported, the top tokens' probabilities."""

    token: int | str  # the id when the server gives ids, else the token's text
    text: str
    top: dict[int | str, float] | None  # token -> probability, most likely first


def endpoint(url: str) -> str:
    """The /v1/completions address of a server given by its base URL (or that address)."""
    url = url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ServerError(f"a server is an http(s) URL; got {url!r}")
    return url if url.endswith("/completions") else url + "/v1/completions"


def post(url: str, body: dict, *, timeout_s: float = TIMEOUT_S) -> dict:
    """POST body as JSON to url; the answer's JSON object."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            raw = resp.read(BODY_BYTES_MAX + 1)
    except urllib.error.HTTPError as err:
        raise ServerError(f"{url} answered HTTP {err.code}: {_message(err.read())}") from err
    except TimeoutError as err:
        raise ServerError(f"{url} did not answer within {timeout_s:g} s (slow or stuck); "
                          "raise --timeout or ask for less") from err
    except urllib.error.URLError as err:
        if isinstance(err.reason, TimeoutError):
            raise ServerError(f"{url} did not answer within {timeout_s:g} s (slow or stuck); "
                              "raise --timeout or ask for less") from err
        raise ServerError(f"cannot reach {url} ({err.reason}): is the server up?") from err
    except (ConnectionError, OSError) as err:
        raise ServerError(f"cannot reach {url} ({err}): is the server up?") from err
    if len(raw) > BODY_BYTES_MAX:
        raise ServerError(f"{url} answered more than {BODY_BYTES_MAX} bytes")
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ServerError(f"{url} did not answer JSON: {raw[:120]!r}") from err
    if not isinstance(doc, dict):
        raise ServerError(f"{url} answered {type(doc).__name__}, not a JSON object")
    return doc


def _message(raw: bytes) -> str:
    try:
        doc = json.loads(raw)
        err = doc.get("error", doc) if isinstance(doc, dict) else doc
        return str(err.get("message", err) if isinstance(err, dict) else err)[:300]
    except (json.JSONDecodeError, UnicodeDecodeError):
        return raw[:300].decode("utf-8", "replace")


def _choice(doc: dict) -> dict:
    choices = doc.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ServerError(f"the answer has no choices: {json.dumps(doc)[:200]}")
    return choices[0]


def _prob(entry: dict) -> float:
    if "prob" in entry:
        return float(entry["prob"])
    return math.exp(float(entry["logprob"]))


def _key(entry: dict) -> int | str:
    return int(entry["id"]) if "id" in entry else str(entry["token"])


def positions(doc: dict) -> list[Position]:
    """The generated positions of an answer (see the module's docstring)."""
    lp = _choice(doc).get("logprobs")
    if not lp:
        raise ServerError("the answer carries no logprobs (the server ignores 'logprobs', "
                          "or computes none): the tokens cannot be read")
    try:
        if isinstance(lp.get("content"), list):  # llama.cpp's form
            out = []
            for e in lp["content"]:
                tops = e.get("top_probs", e.get("top_logprobs"))
                top = None if tops is None else {_key(t): _prob(t) for t in tops}
                out.append(Position(_key(e), str(e.get("token", "")), top))
            return out
        tokens, tops = lp["tokens"], lp.get("top_logprobs")  # OpenAI's legacy form
        return [Position(str(t), str(t), None if tops is None or tops[i] is None else
                         {str(k): math.exp(float(v)) for k, v in tops[i].items()})
                for i, t in enumerate(tokens)]
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ServerError(f"cannot read the answer's logprobs ({err!r}): "
                          f"{json.dumps(lp)[:200]}") from err


def model_of(doc: dict) -> str:
    """The model the answer says it came from ('' when it does not say)."""
    return str(doc.get("model", "") or "")
