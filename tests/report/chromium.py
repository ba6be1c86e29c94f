"""A minimal headless-Chromium driver over the DevTools protocol on a pipe (no port, no network).

Chromium started with ``--remote-debugging-pipe`` reads DevTools commands from file descriptor 3
and writes replies and events to descriptor 4, each message a JSON text ended by a NUL byte. This
driver loads a page, collects console messages and uncaught exceptions, evaluates JavaScript and
takes screenshots; nothing but the standard library.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["Chromium", "find_chromium"]


def find_chromium() -> str | None:
    """Path of a Chromium binary (Debian's ``chromium``), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Chromium:
    """One headless Chromium process and one page; use as a context manager."""

    def __init__(self, binary: str, width: int = 1200, height: int = 900,
                 timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.width, self.height = width, height
        self._profile = tempfile.mkdtemp(prefix="fairprobe-chromium-")
        to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, from_child_w = os.pipe()
        # the child sees our pipe ends as its fd 3 (commands in) and fd 4 (replies out)
        args = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--mute-audio", "--hide-scrollbars",
            f"--user-data-dir={self._profile}", f"--window-size={width},{height}",
            "--remote-debugging-pipe", "about:blank",
        ]

        def _dup_fds() -> None:  # in the child, before exec
            import fcntl

            r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)  # out of the way of 3 and 4
            w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)  # dup2 makes inheritable descriptors; others are not (PEP 446)
            os.dup2(w, 4)

        # close_fds would run after preexec_fn and close 3 and 4; every other descriptor of
        # ours is non-inheritable anyway
        self.proc = subprocess.Popen(args, close_fds=False, preexec_fn=_dup_fds,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    # -- protocol -----------------------------------------------------------------------------

    def _send(self, method: str, params: dict[str, Any] | None = None,
              session: str | None = None) -> int:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child_w, json.dumps(msg).encode() + b"\0")
        return self._next_id

    def _read_message(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from_child_r], [], [], left)
            if ready:
                chunk = os.read(self._from_child_r, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe (did it crash?)")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)  # type: ignore[no-any-return]

    def call(self, method: str, params: dict[str, Any] | None = None,
             page: bool = True) -> dict[str, Any]:
        """Send a command (to the page session by default) and wait for its reply."""
        mid = self._send(method, params, self.session if page else None)
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read_message(deadline)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})  # type: ignore[no-any-return]
            if "method" in msg:
                self.events.append(msg)

    def wait_for_event(self, method: str) -> dict[str, Any]:
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read_message(deadline)
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg

    # -- page ----------------------------------------------------------------------------------

    def open(self, url: str) -> None:
        """Attach to a fresh page, enable console/exception reporting, load ``url``."""
        target = self.call("Target.createTarget", {"url": "about:blank"}, page=False)
        att = self.call("Target.attachToTarget", {"targetId": target["targetId"],
                                                  "flatten": True}, page=False)
        self.session = att["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            self.call(domain)
        self.call("Emulation.setDeviceMetricsOverride", {
            "width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        self.wait_for_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                             "awaitPromise": True})
        if "exceptionDetails" in res:
            raise RuntimeError(f"JavaScript error: {res['exceptionDetails']}")
        return res["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors/warnings, uncaught exceptions, log errors and failed requests so far."""
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{p['type']}: {p.get('args')}")
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails')}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error",
                                                                                "warning"):
                out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif m == "Network.loadingFailed":
                out.append(f"request failed: {p.get('errorText')}")
        return out

    def requests(self) -> list[str]:
        return [ev["params"]["request"]["url"] for ev in self.events
                if ev.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: str | Path, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            m = self.call("Page.getLayoutMetrics")
            size = m.get("cssContentSize") or m["contentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"],
                              "height": min(size["height"], 16000), "scale": 1}
        data = self.call("Page.captureScreenshot", params)["data"]
        out = Path(path)
        out.write_bytes(base64.b64decode(data))
        return out

    # -- lifetime ------------------------------------------------------------------------------

    def close(self) -> None:
        try:
            self.call("Browser.close", page=False)
        except Exception:  # noqa: BLE001 - already gone
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in (self._to_child_w, self._from_child_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
