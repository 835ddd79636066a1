"""`python -m app`: serve Attention Lab with uvicorn on the configured HOST and PORT."""

import uvicorn

from app.settings import environment_settings


def main() -> None:
    settings = environment_settings()
    uvicorn.run(
        "app.main:app",
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        proxy_headers=False,
        access_log=False,  # app.requestlog writes one JSON line per request instead
        server_header=False,
    )


if __name__ == "__main__":
    main()
