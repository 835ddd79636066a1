"""The decoder's weights: prepared once per machine under a lock, memory-mapped read-only by
every process, and prepared again when the folder cannot be read."""

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from app.features.decoder import store
from app.features.decoder.store import LoadedDecoder
from app.settings import Settings


def fake_gguf(folder: Path) -> Path:
    gguf = folder / "model.gguf"
    gguf.write_bytes(b"GGUF" + bytes(range(256)) * 16)
    return gguf


def test_the_weights_are_mapped_read_only_from_the_prepared_folder(
    decoder: LoadedDecoder,
) -> None:
    for name in ("embedding", "w_q", "w_down", "final_norm"):
        array = getattr(decoder.weights, name)
        assert array.dtype == np.float32
        assert not array.flags.writeable
        assert isinstance(array.base, np.memmap)  # pages shared by every worker


def test_workers_starting_together_prepare_the_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = fake_gguf(tmp_path)
    written = []

    def write(source: Path, folder: Path) -> None:
        written.append(folder)
        time.sleep(0.2)  # long enough for the other worker to wait on the lock
        (folder / store.MANIFEST).write_text("{}")

    monkeypatch.setattr(store, "write_folder", write)
    (tmp_path / "cache").mkdir()
    stale = tmp_path / "cache" / f"{store.BUILDING}dead"  # a builder that died mid-way
    stale.mkdir()
    folders: list[Path] = []
    workers = [
        threading.Thread(target=lambda: folders.append(store.prepare(gguf, tmp_path / "cache")))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(written) == 1
    assert folders[0] == folders[1] == store.cache_folder(gguf, tmp_path / "cache")
    assert (folders[0] / store.MANIFEST).is_file()
    assert not stale.exists()
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.is_dir()] == [folders[0].name]


def test_a_folder_that_cannot_be_read_is_prepared_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoder: LoadedDecoder
) -> None:
    gguf = store.package_gguf()
    assert gguf is not None
    settings = Settings()
    good = store.cache_folder(gguf, settings.cache_dir)
    assert good.is_dir()

    def link_good_files(source: Path, folder: Path) -> None:  # a rebuild, without the wait
        for file in good.iterdir():
            (folder / file.name).symlink_to(file)

    damaged = store.cache_folder(gguf, tmp_path)
    damaged.mkdir(parents=True)
    link_good_files(gguf, damaged)
    (damaged / "w_q.npy").unlink()
    (damaged / "w_q.npy").write_bytes(b"\x93NUMPY cut short")
    monkeypatch.setattr(store, "write_folder", link_good_files)
    loaded = store.load(gguf, tmp_path)
    assert loaded.weights.w_q.shape == (30, 576, 576)
    assert (damaged / "w_q.npy").resolve() == (good / "w_q.npy").resolve()


def test_another_file_gets_another_folder(tmp_path: Path) -> None:
    one = fake_gguf(tmp_path)
    other = tmp_path / "other.gguf"
    other.write_bytes(one.read_bytes()[:-1] + b"!")
    assert store.cache_folder(one, tmp_path) != store.cache_folder(other, tmp_path)
