# specviz: the Streamlit app in a container.
#   docker build -t specviz . && docker run --rm -p 8501:8501 specviz   # then open http://localhost:8501
# tests/test_entrypoint.py runs this file's CMD and HEALTHCHECK verbatim (only the port is
# swapped for a free one), so the entry command cannot rot even where Docker cannot build.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Pinned runtime requirements first, so code edits reuse this layer.
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

# A non-root user owns nothing it does not need: the code stays root-owned and read-only.
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin specviz

COPY .streamlit/ ./.streamlit/
COPY specviz/ ./specviz/
COPY pages/ ./pages/
COPY app.py ./

USER specviz
EXPOSE 8501

# Streamlit's own health endpoint, probed with the standard library (the slim image has no curl).
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=9).status == 200 else 1)"]

CMD ["streamlit", "run", "app.py", "--server.headless=true", "--server.address=0.0.0.0", "--server.port=8501"]
