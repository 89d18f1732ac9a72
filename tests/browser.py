"""A real headless Chromium driven over the DevTools protocol (``--remote-debugging-pipe``: JSON
messages separated by NUL bytes on file descriptors 3 and 4), with no Python dependency: open a
page, collect console errors and uncaught exceptions, check every image, take a full-page
screenshot. Used by ``test_pages_browser.py``."""
from __future__ import annotations

import base64
import fcntl
import json
import os
import subprocess
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe"]
IMAGES = ("JSON.stringify(Array.from(document.images).map(i => ({alt: i.alt, complete: i.complete, "
          "width: i.naturalWidth})))")


class Browser:
    """One Chromium process; ``open(path)`` returns what the page did."""

    def __init__(self, profile: Path, timeout: float = 60.0, log=subprocess.DEVNULL):
        to_child, self._write = os.pipe()
        self._read, from_child = os.pipe()

        def fds():  # in the child: the protocol's fixed descriptors 3 (commands) and 4 (replies)
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child, from_child)]  # out of 3 and 4's way
            os.dup2(high[0], 3)  # dup2 leaves the copy inheritable
            os.dup2(high[1], 4)

        self.process = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                        preexec_fn=fds, close_fds=False,  # 3 and 4 stay open
                                        stdout=subprocess.DEVNULL, stderr=log)
        os.close(to_child)
        os.close(from_child)
        self.timeout, self._buffer, self._next, self.events = timeout, b"", 0, []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def _receive(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def wait_for(self, method: str, session: str) -> None:
        while not any(e.get("method") == method and e.get("sessionId") == session for e in self.events):
            self.events.append(self._receive())

    def open(self, path: Path, screenshot: Path, width: int = 1200) -> dict:
        """Load ``path``; return ``{"images": [...], "errors": [...], "title": str}`` and write a
        full-page PNG screenshot."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900, "deviceScaleFactor": 1,
                                                         "mobile": False}, session)
        self.events.clear()
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session)
        self.wait_for("Page.loadEventFired", session)
        images = json.loads(self.send("Runtime.evaluate", {"expression": IMAGES, "returnByValue": True},
                                      session)["result"]["value"])
        title = self.send("Runtime.evaluate", {"expression": "document.title", "returnByValue": True},
                          session)["result"]["value"]
        size = self.send("Page.getLayoutMetrics", session=session)["cssContentSize"]
        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": {
            "x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}}, session)
        Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
        errors = [e["params"] for e in self.events if e.get("sessionId") == session and (
            e.get("method") == "Runtime.exceptionThrown"
            or (e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") in ("error", "assert"))
            or (e.get("method") == "Log.entryAdded" and e["params"]["entry"].get("level") == "error"))]
        self.send("Target.closeTarget", {"targetId": target})
        return {"images": images, "errors": errors, "title": title}

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._write)
        os.close(self._read)
