"""`python -m app.healthcheck`: exit 0 when /healthz answers 200 (the container's HEALTHCHECK:
liveness, whether the process serves at all; a load balancer routes by /readyz instead, which
says 503 while the server is busy).

Standard library only, so the image needs no curl.
"""

import sys
import urllib.request

from app.settings import environment_settings

ANY_ADDRESS = {"", "0.0.0.0", "::"}


def healthz_url(host: str, port: int) -> str:
    if host in ANY_ADDRESS:
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/healthz"


def main() -> int:
    settings = environment_settings()
    try:
        with urllib.request.urlopen(healthz_url(settings.host, settings.port), timeout=3) as r:
            return 0 if r.status == 200 else 1
    except OSError as exc:
        print(f"unhealthy: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
