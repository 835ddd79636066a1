"""Shared fixtures: an app with default settings, a client for it, and the app on uvicorn."""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from threadpoolctl import threadpool_limits

from app.features.decoder.store import LoadedDecoder, decoder_store
from app.main import create_app
from app.settings import Settings

TEST_SETTINGS: dict[str, object] = {}


@pytest.fixture
def settings() -> Settings:
    return Settings(**TEST_SETTINGS)


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    """An app of its own, for a test that changes it or reads its state."""
    return create_app(settings)


@pytest.fixture
def make_client() -> Iterator[Callable[..., TestClient]]:
    """make_client(**settings): a client of a fresh app with those settings, closed after
    the test."""
    with ExitStack() as stack:

        def make(**changes: Any) -> TestClient:
            app = create_app(Settings(**{**TEST_SETTINGS, **changes}))
            return stack.enter_context(TestClient(app, raise_server_exceptions=False))

        yield make


@pytest.fixture
def fresh_client(app: FastAPI) -> Iterator[TestClient]:
    """A client of a fresh app: its response cache starts empty."""
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def client() -> Iterator[TestClient]:
    """One client for the whole session, for the tests that only read answers."""
    app = create_app(Settings(**TEST_SETTINGS))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def live_server() -> Iterator[str]:
    """The app served by uvicorn on 127.0.0.1 at a free port, for the whole session."""
    # Request lines off: the server thread would write them between the tests' captures.
    app = create_app(Settings(log_level="warning", **TEST_SETTINGS))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="session")
def decoder() -> LoadedDecoder:
    """SmolLM2-135M-Instruct, loaded once per test process (prepared once per machine)."""
    settings = Settings(**TEST_SETTINGS)
    return decoder_store(settings.decoder_gguf, settings.cache_dir).get(wait_s=600)


@pytest.fixture
def one_blas_thread() -> Iterator[None]:
    """One BLAS thread, as the decoder's service runs: two on a busy machine wait for each
    other far longer than they compute (OpenBLAS spins)."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
