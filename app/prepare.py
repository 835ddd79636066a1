"""`python -m app.prepare`: write now what the app would otherwise write into CACHE_DIR as it
starts, so that it starts on a read-only disk and never prepares anything while serving.

`make run` and `make test` run it after installing; the image runs it as it is built. Two
things land in the cache folder: the static files as served (hashed and compressed, a few
seconds) and the decoder's weights dequantised to float32 (about 520 MB, half a minute). Both
are done once: a second run finds them and returns at once.
"""

import sys
import time

from app.core.errors import ModelUnavailableError
from app.features.decoder.store import decoder_store
from app.settings import environment_settings
from app.web.static import StaticFiles


def main() -> int:
    settings = environment_settings()
    started = time.monotonic()
    StaticFiles.built(settings.cache_dir)
    try:
        decoder_store(settings.decoder_gguf, settings.cache_dir).get(wait_s=3600)
    except ModelUnavailableError as error:
        print(error.msg, file=sys.stderr)
        return 1
    print(
        f"static files and decoder weights ready in {settings.cache_dir} "
        f"({time.monotonic() - started:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
