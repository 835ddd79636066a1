"""`python -m app`: serve Attention Lab with uvicorn on the configured HOST and PORT.

uvicorn runs with app/web/server.py's protocol (timeouts for slow heads and bodies, a header cap,
a connection cap that sheds the longest-waiting connection, a limit on requests in progress)
and WORKERS processes, by default one per available core.
"""

import resource

import uvicorn

from app.settings import Settings, environment_settings

PROTOCOL = "app.web.server:BoundedHttpToolsProtocol"


def raise_open_file_limit() -> int:
    """Lift this process's soft limit on open files to its hard limit (each connection is one
    file); the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


def uvicorn_options(settings: Settings) -> dict[str, object]:
    return {
        "host": settings.host,
        "port": settings.port,
        "workers": settings.workers,
        "http": PROTOCOL,
        "loop": settings.event_loop,
        "timeout_keep_alive": settings.keep_alive_seconds,
        # Used only by `--http h11`: the same cap on a request's head.
        "h11_max_incomplete_event_size": settings.max_header_bytes + 65_536,
        "proxy_headers": False,
        "access_log": False,  # the request log middleware writes one JSON line per request
        "server_header": False,
    }


def main() -> None:
    raise_open_file_limit()
    uvicorn.run("app.main:app", **uvicorn_options(environment_settings()))


if __name__ == "__main__":
    main()
