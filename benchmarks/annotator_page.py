"""The annotator's page by keyboard, in a real browser: how fast the feedback box is ready after an answer, and
how heavy the page is.

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/annotator_page.py [--sessions 20]

What runs: a scratch PostgreSQL database (``<name>_page_bench``, dropped at the end), daphne (ASGI, HTTP and
WebSockets), one Celery worker, an embedded Redis, as in ``queue_load.py``; a simulated model that streams its
answer in chunks (``--chunk-delay`` s apart); Debian's chromium driven by Playwright. One annotator does
``--sessions`` sessions of 3 feedback rounds with the keyboard only: the feedback is typed into the box that has
taken the focus, Ctrl+Enter sends, N opens the next item.

Measured per round, in the page (``performance.now()``): from the WebSocket frame carrying the answer's last chunk
to the moment the feedback box has the focus and is ready for typing. This includes the server's verification of
the answer and the snapshot it pushes, so it is what an annotator waits for. Printed: count, median, p95 and max
(target p95 <= 50 ms), then the JavaScript and CSS the session page loads, uncompressed (target <= 60 kB).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from argparse import Namespace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.figures import percentile  # noqa: E402
from benchmarks.queue_load import (  # noqa: E402
    BATCH_NAME,
    create_data,
    scratch_setup,
    start_processes,
    tear_down,
)

PASSWORD = "page-bench-password"

# Runs before the page's own scripts (a DevTools init script, outside the page's CSP): stamps the arrival of every
# answer chunk and the moments the feedback box takes the focus.
PROBE = """
(() => {
  window.__chunkAt = null; window.__readyAfterChunk = [];
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (e) => {
        if (typeof e.data === "string" && JSON.parse(e.data).type === "chunk") window.__chunkAt = performance.now();
      });
    }
  };
  document.addEventListener("focusin", (e) => {
    if (e.target.id === "feedback-input" && window.__chunkAt !== null) {
      window.__readyAfterChunk.push(performance.now() - window.__chunkAt);
      window.__chunkAt = null;
    }
  });
})();
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--chunk-delay", type=float, default=0.02, help="seconds between two answer chunks")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    return parser.parse_args()


def prepare(args) -> str:
    from annotate.models import Batch, ModelConfig, User

    _, credentials = create_data(args.sessions, 1, reuse=False)
    Batch.objects.filter(name=BATCH_NAME).update(max_rounds=3)
    ModelConfig.objects.filter(name="bench-sim").update(backend_settings={"chunk_delay": args.chunk_delay})
    user = User.objects.get(username="bench-0000")
    user.set_password(PASSWORD)
    user.save()
    return user.username


def run_browser(base: str, username: str, sessions: int) -> tuple[list[float], dict[str, int]]:
    from playwright.sync_api import expect, sync_playwright

    weights: dict[str, int] = {}
    latencies: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                             args=["--no-sandbox", "--headless=new", "--disable-gpu"])
        page = browser.new_page()
        page.set_default_timeout(60_000)
        page.add_init_script(PROBE)

        def weigh(response):
            if (response.request.resource_type in ("script", "stylesheet") and "/annotate/sessions/" in page.url
                    and not 300 <= response.status < 400):  # a redirect has no body to weigh
                weights[response.url.split("/static/")[-1]] = len(response.body())

        page.on("response", weigh)
        page.goto(f"{base}/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_url(lambda url: "/login/" not in url)
        page.goto(f"{base}/?annotate=1")
        page.locator("#next-button").focus()
        page.keyboard.press("Enter")
        for number in range(sessions):
            page.wait_for_url("**/annotate/sessions/*/")
            for index in (1, 2, 3):
                box = page.locator("#feedback-input")
                expect(page.locator("#round-progress")).to_have_text(f"round {index} of 3")
                expect(box).to_be_focused()
                page.keyboard.type("Look again at the left part of the picture.")
                page.keyboard.press("Control+Enter")
            expect(page.locator("#next-button")).to_be_focused()
            latencies.extend(page.evaluate("window.__readyAfterChunk"))
            if number + 1 < sessions:
                url = page.url
                page.keyboard.press("n")
                page.wait_for_url(lambda u, url=url: u != url)
        browser.close()
    return latencies, weights


def main() -> None:
    args = parse_args()
    _, scratch, env, var_dir = scratch_setup(args.database_url, "page_bench", "_page_bench")
    env["STATIC_FROM_FINDERS"] = "1"  # the page's own scripts and styles, served without a collectstatic step
    procs = []
    try:
        username = prepare(args)
        procs, base, _, described = start_processes(
            env, var_dir, Namespace(server="daphne", web_workers=1, pool=4, celery_concurrency=2))
        print(f"server: {described}; {args.sessions} sessions x 3 rounds by keyboard; chunks "
              f"{args.chunk_delay:g} s apart; {os.cpu_count()} CPUs", flush=True)
        started = time.perf_counter()
        latencies, weights = run_browser(base, username, args.sessions)
        elapsed = time.perf_counter() - started
    finally:
        tear_down(procs, var_dir, args.database_url, scratch)
    print(f"{args.sessions} sessions in {elapsed:.1f} s")
    if latencies:
        ordered = sorted(latencies)
        print(f"last answer chunk -> feedback box ready: n={len(ordered)} median {percentile(ordered, 0.5):.1f} ms, "
              f"p95 {percentile(ordered, 0.95):.1f} ms, max {ordered[-1]:.1f} ms (target p95 <= 50 ms)")
    else:
        print("no round was measured (the probe saw no chunk before a focus)")
    total = sum(weights.values())
    parts = ", ".join(f"{name} {size / 1000:.1f} kB" for name, size in sorted(weights.items()))
    print(f"session page JS + CSS: {total / 1000:.1f} kB uncompressed ({parts}) (target <= 60 kB)")


if __name__ == "__main__":
    main()
