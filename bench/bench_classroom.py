"""What classroom mode costs a page: the same lab page served plain and with the classroom
parameters (presenter mode, Spanish, a lesson), whose links and forms the templates build
with the view (app/web/classroom.py; nothing rewrites the answer).

- Served: GET of the lab at n = 16 and n = 128 and of the walk-through, plain and with
  `present=1&lang=es&lesson=padding`, taking turns on keep-alive connections to one
  `python -m app` on 127.0.0.1, gzip as a browser asks. Median milliseconds of each and
  their ratio.

    .venv/bin/python bench/bench_classroom.py
"""

import http.client
import os
import sys
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_api import median_seconds, running_app
from bench_page import get

REPEATS = 60
CLASSROOM = {"present": "1", "lang": "es", "lesson": "padding"}
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "near",
    "our",
    "quiet",
    "river",
    "bank",
    "today",
]


def lab_path(n: int, extra: dict[str, str]) -> str:
    tokens = " ".join(WORDS[i % len(WORDS)] for i in range(n))
    query = {"tokens": tokens, "d_model": "4", "d_k": "4", "d_v": "4", **extra}
    return "/?" + urlencode(query)


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    pages = {
        "lab, n = 16": lambda extra: lab_path(16, extra),
        "lab, n = 128": lambda extra: lab_path(128, extra),
        "walk-through, softmax": lambda extra: (
            "/walkthrough?" + urlencode({"step": "weights", **extra})
        ),
    }
    with running_app() as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        print(f"{'page':<24}{'plain ms':>10}{'classroom ms':>14}{'ratio':>8}{'KB':>8}")
        for name, path in pages.items():
            plain, classroom = path({}), path(CLASSROOM)
            size = len(get(conn, classroom)) / 1024
            a, b = median_seconds(
                [lambda p=plain: get(conn, p), lambda p=classroom: get(conn, p)], REPEATS
            )
            print(f"{name:<24}{a * 1000:>10.2f}{b * 1000:>14.2f}{b / a:>8.2f}{size:>8.0f}")


if __name__ == "__main__":
    main()
