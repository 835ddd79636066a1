"""Refuse an oversized request before anything reads or parses it: a body over the cap gets
413, a query string (a page's state) over its cap gets 414, a body sent to the JSON API that
is not JSON 415. The edge layer (app/web/middleware/edge.py) asks `refusal` for every request
and counts the bytes of a body sent without Content-Length as they arrive."""


def too_large_message(max_bytes: int) -> str:
    return f"The request body is larger than {max_bytes:,} bytes; send a smaller one."


def too_long_message(max_bytes: int) -> str:
    return (
        f"The address is longer than {max_bytes:,} bytes; use the API with a JSON body "
        "for inputs this large."
    )


def not_json_message() -> str:
    return (
        "This API reads JSON only: send the body with the header "
        "content-type: application/json (with curl: -H 'content-type: application/json')."
    )


def is_json(content_type: bytes) -> bool:
    kind = content_type.split(b";", 1)[0].strip().lower()
    return kind == b"application/json" or kind.endswith(b"+json")


def refusal(
    method: str,
    path: str,
    headers: dict[bytes, bytes],
    query: bytes,
    max_bytes: int,
    max_query: int,
) -> tuple[int, str] | None:
    """The status and sentence refusing a request from its head alone, or None: a query
    string over `max_query` bytes (414); a body posted to the JSON API that does not say it
    is JSON (415); a Content-Length that is not a number or over `max_bytes` (413)."""
    if len(query) > max_query:
        return 414, too_long_message(max_query)
    if (
        method == "POST"  # every body the API reads is a POST's
        and path.startswith("/api/")
        and headers.get(b"content-length", b"0") != b"0"
        and not is_json(headers.get(b"content-type", b""))
    ):
        return 415, not_json_message()
    length = headers.get(b"content-length")
    if length is not None and (not length.isdigit() or int(length) > max_bytes):
        return 413, too_large_message(max_bytes)
    return None
