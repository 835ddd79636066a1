"""/decoder in a real browser: from the last key of an 8-word prompt to the next-token bars.

Debian's chromium (Playwright, the flags of tests/browser/conftest.py) on `python -m app`
(response cache off, so every prompt is computed). The page is loaded once and the
server's one-off work done first (the long text's policy runs, the induction test, the
timing run of /api/decoder/measure). Then, for each of several 8-word prompts:

- one key: the prompt typed but for its last character and settled, then the last key;
  the time from its keydown to the frame after the swap that shows that prompt's bars
  (static/js/live.js's debounce included);
- typing: the whole prompt typed into an emptied field at 80 ms per key (a teacher's pace:
  each pause outlasts the debounce, so most keys send a request that the next one aborts);
  the time from the last keydown to the frame after the bars of the whole prompt.

Medians are printed with the machine's load average: on a shared machine the wall times
stretch. So the CPU time of a one-key edit is printed too (the server's and chromium's, from
/proc, and the server's alone), with the size of the fragment it answered: with a core to
themselves, the last key's bars take about that plus the 60 ms debounce.
The goal is ≤ 300 ms.

    .venv/bin/python bench/bench_decoder_page.py            # the page as it opens
    .venv/bin/python bench/bench_decoder_page.py 17.4       # with head 4 of layer 17 open
"""

import os
import statistics
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_page import started_cpu_seconds
from server import Server

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

GOAL_MS = 300
KEY_MS = 80
PROMPTS = [
    "The old fisherman mended his nets every morning",
    "My sister keeps three small cats in Madrid",
    "When the rain stopped we walked to school",
    "A quiet river runs behind the red house",
    "Our teacher wrote four numbers on the board",
    "The train to the coast leaves at noon",
    "She opened the letter and began to laugh",
]

# Installed once: the time of each keydown, and for each swap whose bars belong to the
# prompt now in the field, the time from the last keydown to the next frame.
WATCH = """() => {
  window.benchTimes = [];
  window.benchLastKey = 0;
  document.addEventListener("keydown", () => { window.benchLastKey = performance.now(); }, true);
  document.addEventListener("live:updated", () => {
    const answers = performance.getEntriesByType("resource")
      .filter(e => e.name.includes("fragment=1"));
    const size = answers.length ? answers[answers.length - 1].decodedBodySize : 0;
    performance.clearResourceTimings(); // its buffer holds 250 entries
    const echo = document.querySelector("#next .prompt-echo");
    const typed = document.getElementById("text").value;
    if (!echo || echo.dataset.prompt !== typed) return;
    const key = window.benchLastKey;
    requestAnimationFrame(() => {
      window.benchTimes.push([typed, performance.now() - key, size]);
      document.dispatchEvent(new Event("bench:timed"));
    });
  });
  window.benchUntil = (test) => new Promise((done) => {
    if (test()) return done(true);
    document.addEventListener("bench:timed", function seen() {
      if (!test()) return;
      document.removeEventListener("bench:timed", seen);
      done(true);
    });
  });
}"""
# Waiting for a timing: one promise in the page, not a poll every few ms, whose round trips
# through Playwright's driver would take CPU from the page and the server being timed.
COUNT = "count => window.benchUntil(() => window.benchTimes.length >= count)"
TYPED = "text => window.benchUntil(() => window.benchTimes.some(t => t[0] === text))"


def settle(page: Page, count: int) -> float:
    """Wait for the count-th timing of the session and return it (ms)."""
    page.evaluate(COUNT, count)
    return float(page.evaluate(f"window.benchTimes[{count - 1}][1]"))


def warm(base: str) -> None:
    """The server's one-off work: the page's kept runs and the timing run."""
    urllib.request.urlopen(base + "/decoder", timeout=600).read()
    for _ in range(120):
        try:
            urllib.request.urlopen(base + "/api/decoder/measure", timeout=600).read()
            return
        except OSError:  # 503 while the timing run goes on
            time.sleep(1)


def main() -> None:
    head = sys.argv[1] if len(sys.argv) > 1 else None
    server = Server(env={"RESPONSE_CACHE_BYTES": "0"})
    try:
        run(server, "/decoder" if head is None else f"/decoder?pick={head}")
    finally:
        server.stop()


def run(server: Server, path: str) -> None:
    with sync_playwright() as p:
        base = server.url
        warm(base)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(base + path)
        page.evaluate(WATCH)
        field = page.locator("#text")
        one_key, typing, cpu, server_cpu, sizes = [], [], [], [], []
        seen = 0
        for prompt in PROMPTS:
            field.fill(prompt[:-1])  # one input event: one request, then settled
            field.dispatch_event("input")
            seen += 1
            settle(page, seen)
            field.press("End")
            used, served = started_cpu_seconds(), server.cpu_seconds()
            field.press(prompt[-1])
            seen += 1
            one_key.append(settle(page, seen))
            cpu.append(1000 * (started_cpu_seconds() - used))
            server_cpu.append(1000 * (server.cpu_seconds() - served))
            sizes.append(int(page.evaluate(f"window.benchTimes[{seen - 1}][2]")))

            field.fill("")
            field.dispatch_event("input")
            page.wait_for_selector("#page-messages[data-problems='1']")
            page.wait_for_timeout(300)  # the empty prompt's answer is in
            final = prompt.lower()
            field.press_sequentially(final, delay=KEY_MS)
            page.evaluate(TYPED, final)
            times = page.evaluate("window.benchTimes")
            typing.append(next(float(t) for text, t, _ in times if text == final))
            seen = len(times)
        browser.close()
    print(f"page {path}: fragment of a one-key edit {statistics.median(sizes) / 1000:.0f} kB")
    print(f"server CPU per one-key edit: median {statistics.median(server_cpu):.0f} ms")
    report(one_key, typing, cpu)


def report(one_key: list[float], typing: list[float], cpu: list[float]) -> None:
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores")
    print(f"one key  : median {statistics.median(one_key):.0f} ms  {[round(t) for t in one_key]}")
    print(f"CPU per one-key edit (server and chromium): median {statistics.median(cpu):.0f} ms")
    print(f"typing   : median {statistics.median(typing):.0f} ms  {[round(t) for t in typing]}")
    print(f"goal     : ≤ {GOAL_MS} ms from the last key to the bars")


if __name__ == "__main__":
    main()
