"""Fixtures the decoder's API and page tests share."""

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.features.decoder import store
from app.features.decoder.store import LoadedDecoder
from app.settings import Settings


@dataclass(frozen=True)
class SlowLoad:
    """A model file of its own (a store not loaded yet) whose loading waits for `release`."""

    gguf: Path
    release: threading.Event

    def finish(self, settings: Settings) -> None:
        """Let the load go on and wait until the store has it (however busy the machine)."""
        self.release.set()
        store.decoder_store(self.gguf, settings.cache_dir).start().result(30)


@pytest.fixture
def slow_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoder: LoadedDecoder
) -> Iterator[SlowLoad]:
    release = threading.Event()

    def waiting_load(gguf: Path, cache_dir: Path) -> LoadedDecoder:
        release.wait(30)
        return decoder

    monkeypatch.setattr(store, "load", waiting_load)
    gguf = tmp_path / "model.gguf"
    gguf.symlink_to(store.package_gguf())
    yield SlowLoad(gguf, release)
    release.set()  # a test that failed early leaves no loader waiting
