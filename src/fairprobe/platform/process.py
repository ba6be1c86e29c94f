"""Run the platform server as a real subprocess (for tests, demos and experiments).

>>> with PlatformProcess(fairwash="positive", gamma=0.2, seed=1) as plat:   # doctest: +SKIP
...     httpx.post(plat.url + "/audit/predict", json={"instances": [...]})
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from fairprobe._proc import die_with_parent
from fairprobe.errors import EndpointUnreachableError, PortInUseError
from fairprobe.platform.netutil import check_host

__all__ = ["PlatformProcess"]


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _port_taken(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


class PlatformProcess:
    """``python -m fairprobe platform serve ...`` as a context manager.

    Starts the server, waits until ``GET /health`` answers with this process's own instance
    token, exposes :attr:`url`, and terminates the process on exit (SIGTERM, then SIGKILL after
    ``stop_timeout`` seconds).

    Parameters
    ----------
    port : int or None
        ``None`` picks a free port (retrying on a lost race). A port already in use raises
        :class:`~fairprobe.errors.PortInUseError`.
    fairwash, gamma, mix, seed, model_file, allow_pickle, fail_rate, delay_ms, llm_garble_rate, llm_refuse_rate :
        Passed to ``fairprobe platform serve`` (see ``docs/platform.md``).
    llm_reasoning : {"none", "think", "field"}
        Passed to ``fairprobe platform serve`` (see ``docs/platform.md``).
    extra_args : list of str
        Further command-line options.
    startup_timeout : float
        Seconds to wait for ``/health`` before raising
        :class:`~fairprobe.errors.EndpointUnreachableError`.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        fairwash: str = "none",
        gamma: float = 0.0,
        mix: float = 0.5,
        seed: int = 0,
        fairwash_select: str = "random",
        model_file: str | os.PathLike[str] | None = None,
        allow_pickle: bool = False,
        fail_rate: float = 0.0,
        delay_ms: float = 0.0,
        llm_garble_rate: float = 0.0,
        llm_refuse_rate: float = 0.0,
        llm_reasoning: str = "none",
        extra_args: list[str] | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 10.0,
        python: str | None = None,
    ) -> None:
        check_host(host, allow_external=False)
        self.host = host
        self.requested_port = port
        self.port: int | None = None
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.python = python or sys.executable
        self.options = [
            "--fairwash", fairwash,
            "--gamma", repr(float(gamma)),
            "--mix", repr(float(mix)),
            "--fairwash-select", fairwash_select,
            "--seed", str(int(seed)),
            "--fail-rate", repr(float(fail_rate)),
            "--delay-ms", repr(float(delay_ms)),
            "--llm-garble-rate", repr(float(llm_garble_rate)),
            "--llm-refuse-rate", repr(float(llm_refuse_rate)),
            "--llm-reasoning", llm_reasoning,
        ]  # fmt: skip
        if model_file is not None:
            self.options += ["--model-file", os.fspath(model_file)]
            if allow_pickle:
                self.options.append("--allow-pickle")
        self.options += list(extra_args or [])
        self.token = secrets.token_hex(8)
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.health: dict[str, Any] | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        if self.port is None:
            raise EndpointUnreachableError("The platform process is not running.")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def log_text(self) -> str:
        """What the server wrote to stdout/stderr so far."""
        if self._log is None:
            return ""
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")

    def _command(self, port: int) -> list[str]:
        return [
            self.python, "-m", "fairprobe", "platform", "serve",
            "--host", self.host, "--port", str(port), "--instance-token", self.token,
            *self.options,
        ]  # fmt: skip

    def start(self) -> PlatformProcess:
        attempts = 3 if self.requested_port is None else 1
        for attempt in range(attempts):
            port = self.requested_port if self.requested_port is not None else _free_port(self.host)
            if _port_taken(self.host, port):
                if attempt + 1 < attempts:
                    continue
                raise PortInUseError(
                    f"Port {port} on {self.host} is already in use; choose another port."
                )
            try:
                self._launch(port)
                return self
            except PortInUseError:
                self.stop()
                if attempt + 1 >= attempts:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _launch(self, port: int) -> None:
        import httpx

        self._log = tempfile.NamedTemporaryFile(prefix="fairprobe-platform-", suffix=".log")
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.proc = subprocess.Popen(
            self._command(port), stdout=self._log, stderr=subprocess.STDOUT, env=env,
            preexec_fn=die_with_parent,
        )
        self.port = port
        deadline = time.monotonic() + self.startup_timeout
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while True:
                rc = self.proc.poll()
                if rc is not None:
                    lines = [ln for ln in self.log_text.splitlines() if ln.strip()]
                    last = lines[-1] if lines else f"exit code {rc}"
                    self.stop()
                    if rc == PortInUseError.exit_code and "in use" in last:
                        raise PortInUseError(last.removeprefix("error: "))
                    raise EndpointUnreachableError(
                        f"The platform server exited with code {rc}: {last}"
                    )
                try:
                    r = client.get(f"http://{self.host}:{port}/health")
                    if r.status_code == 200 and r.json().get("instance") == self.token:
                        self.health = r.json()
                        return
                except (httpx.HTTPError, ValueError):
                    pass
                if time.monotonic() > deadline:
                    self.stop()
                    raise EndpointUnreachableError(
                        f"The platform server did not answer /health within "
                        f"{self.startup_timeout:g} s on {self.host}:{port}."
                    )
                time.sleep(0.1)

    def stop(self) -> None:
        """Terminate the server (idempotent)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(self.stop_timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        self.port = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> PlatformProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __del__(self) -> None:  # a forgotten process must not outlive its owner
        try:
            self.stop()
        except Exception:
            pass
