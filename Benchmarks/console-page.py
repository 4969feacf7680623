#!/usr/bin/env python3
"""Chirp Console's page under load, for `make bench` (Benchmarks/ChirpBench/Benchmarks/Console.swift).

Loads the console's page in headless Chromium 5 times and reads the time from navigation to the first rendered rows
(window.chirpConsole.stats().firstPaintMs); then keeps it open for --seconds while records arrive, sampling every
second the JavaScript heap (performance.memory.usedJSHeapSize), the rows in the DOM, and the main thread's delay (how
late a 0 ms timer fires). Prints one JSON object on its last line. Uses the WebDriver helpers of
Console/Tests/ConsoleBrowser/browser_check.py (Python's standard library only).
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Console", "Tests", "ConsoleBrowser"))
import browser_check  # noqa: E402

LAG_PROBE = """
const done = arguments[arguments.length - 1];
const samples = [];
function probe(n) {
  const t = performance.now();
  setTimeout(() => { samples.push(performance.now() - t); if (n > 1) probe(n - 1); else done(Math.max(...samples)); }, 0);
}
probe(20);
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--seconds", type=float, default=10)
    args = ap.parse_args()
    proc, driver = browser_check.start_chromedriver()
    result = {"firstPaintMs": [], "heapMiB": [], "lagMs": [], "rowsInDomMax": 0}
    try:
        driver.start_session(browser_check.shutil.which("chromium"))
        for _ in range(5):
            driver.navigate(args.url)
            browser_check.wait_for(lambda: driver.js("return document.body.dataset.ready === '1';"), 30)
            stats = driver.js("return window.chirpConsole.stats();")
            result["firstPaintMs"].append(stats["firstPaintMs"])
        end = time.time() + args.seconds
        while time.time() < end:
            time.sleep(1)
            heap = driver.js("return performance.memory ? performance.memory.usedJSHeapSize : 0;")
            result["heapMiB"].append(heap / 1048576)
            stats = driver.js("return window.chirpConsole.stats();")
            result["rowsInDomMax"] = max(result["rowsInDomMax"], stats.get("rowsInDom", 0))
            result["lagMs"].append(driver.cmd("POST", "/execute/async", {"script": LAG_PROBE, "args": []}))
        result["recordsInMemory"] = driver.js("return window.chirpConsole.stats().recordsInMemory;")
    finally:
        driver.quit()
        browser_check.stop_process(proc, "chromedriver")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
