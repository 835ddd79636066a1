# Attention Lab as one container: uvicorn on 0.0.0.0:8000 as a non-root user.
#
#   docker build -t attention-lab .
#   docker run --rm -p 8000:8000 attention-lab
#
# BASE_IMAGE is any Debian-like image with python3 (3.11+): python:3.11-slim by default,
# the Python the tests run on, so the lock gives it the versions they passed with;
# `make test` passes a base it bootstrapped with mmdebstrap. UV_IMAGE holds the uv that wrote
# uv.lock (pyproject.toml's required-version); `make test` passes one made from its own uv.
ARG BASE_IMAGE=python:3.11-slim-bookworm
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.13.9

FROM ${UV_IMAGE} AS uv

FROM ${BASE_IMAGE}
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/srv/attention-lab \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    CACHE_DIR=/var/cache/attention-lab
# WORKERS is left to the app: one uvicorn worker per core the container may use (its CPU
# limit included); `-e WORKERS=N` sets it. `-e PUBLIC_URL=https://lab.example.org` is the
# address students reach, for the embed code and the examples the pages show (unset, they
# use the address the browser shows; never the request's Host header).
# The app's user, and CACHE_DIR owned by it: the only folder the app writes to.
RUN useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin lab \
    && install -d -o 10001 -g 10001 -m 0755 "$CACHE_DIR"
WORKDIR /srv/attention-lab

# The venv: exactly the versions of uv.lock, the ones the tests passed with; the app's
# dependencies only, not the app, which runs from /srv/attention-lab beside templates/ and
# static/. uv is mounted for this step alone and never lands in a layer. Its cache: none by
# default; a build may lend one, as `make test` lends the host's
# (--volume DIR:/uv-cache --build-arg UV_NO_CACHE=0 --build-arg UV_CACHE_DIR=/uv-cache).
# A build behind a TLS-inspecting proxy passes its CA bundle as the secret `cacert`
# (--secret id=cacert,src=/etc/ssl/certs/ca-certificates.crt); it never lands in a layer.
ARG UV_NO_CACHE=1
ARG UV_CACHE_DIR=/tmp/uv-cache
COPY pyproject.toml uv.lock ./
RUN --mount=from=uv,source=/uv,target=/usr/local/bin/uv \
    --mount=type=secret,id=cacert \
    if [ -s /run/secrets/cacert ]; then export SSL_CERT_FILE=/run/secrets/cacert; fi \
    && UV_PROJECT_ENVIRONMENT=/opt/venv UV_PYTHON=python3 UV_PYTHON_DOWNLOADS=never \
       UV_LINK_MODE=copy uv sync --locked --no-install-project --quiet \
    && find /opt/venv -name '__pycache__' -prune -exec rm -rf {} +

COPY app ./app
COPY templates ./templates
COPY static ./static
COPY translations ./translations
USER 10001:10001
# What the app would write as it starts, written now by its own user (app/prepare.py): the
# static files as served and the decoder's weights in float32, which every worker
# memory-maps. The container then starts in seconds, on a read-only root file system too.
RUN python -m app.prepare
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-m", "app.healthcheck"]
CMD ["python", "-m", "app"]
