"""`python -m app.features.decoder`: prepare the decoder's weights for this machine now (what
the first start would otherwise do), in the cache folder the settings name."""

import sys

from app.core.errors import ModelUnavailableError
from app.features.decoder.store import decoder_store
from app.settings import environment_settings


def main() -> int:
    settings = environment_settings()
    store = decoder_store(settings.decoder_gguf, settings.cache_dir)
    try:
        loaded = store.get(wait_s=3600)
    except ModelUnavailableError as error:
        print(error.msg, file=sys.stderr)
        return 1
    print(f"{loaded.name}: weights prepared in {store.cache_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
