"""A two-node Ray cluster on this machine, for the Ray executor's tests and benchmark.

The nodes take 127.0.0.2 and 127.0.0.3, because Ray turns 127.0.0.1 into the
machine's outward address. Stopping it ends only the processes started in its
own temporary directory, never ``ray stop``, which would end every Ray cluster
of the machine.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout whose oma_host the workers import
HEAD_IP = "127.0.0.2"
WORKER_IP = "127.0.0.3"
_START_TIMEOUT_S = 180


def free_port(ip: str) -> int:
    with socket.socket() as probe:
        probe.bind((ip, 0))
        port: int = probe.getsockname()[1]
        return port


def ray_command() -> list[str]:
    """The ``ray`` command of this interpreter's Ray."""
    found = shutil.which("ray")
    assert found is not None, "the ray command is not installed (pip install 'oma-host[ray]')"
    return [found]


@dataclass
class RayCluster:
    temp_dir: Path
    address: str
    raylets: dict[str, int] = field(default_factory=dict)  # node ip -> raylet pid

    @classmethod
    def start(cls) -> RayCluster:
        # Short: Ray's socket paths under it must fit a Unix socket's name.
        temp_dir = Path(tempfile.mkdtemp(prefix="oma-ray-", dir="/tmp"))
        port = free_port(HEAD_IP)
        cluster = cls(temp_dir, f"{HEAD_IP}:{port}")
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),  # the workers import this checkout's oma_host
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        common = [
            "--num-cpus=1",
            "--object-store-memory=80000000",
            f"--temp-dir={temp_dir}",
            "--disable-usage-stats",
        ]
        try:
            cluster._run(
                [
                    *ray_command(),
                    "start",
                    "--head",
                    f"--port={port}",
                    f"--node-ip-address={HEAD_IP}",
                    '--resources={"head": 1}',
                    "--include-dashboard=false",
                    f"--dashboard-port={free_port(HEAD_IP)}",
                    f"--dashboard-agent-listen-port={free_port(HEAD_IP)}",
                    *common,
                ],
                env,
            )
            cluster._run(
                [
                    *ray_command(),
                    "start",
                    f"--address={cluster.address}",
                    f"--node-ip-address={WORKER_IP}",
                    '--resources={"worker2": 1}',
                    f"--dashboard-agent-listen-port={free_port(WORKER_IP)}",
                    *common,
                ],
                env,
            )
            cluster.raylets = cluster._find_raylets()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _run(self, argv: list[str], env: dict[str, str]) -> None:
        done = subprocess.run(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_START_TIMEOUT_S,
        )
        assert done.returncode == 0, f"{argv[1:3]} failed:\n{done.stdout}\n{done.stderr}"

    def _find_raylets(self) -> dict[str, int]:
        raylets: dict[str, int] = {}
        for pid, argv in self._processes().items():
            if argv and argv[0].endswith("/raylet"):
                for arg in argv:
                    if arg.startswith("--node_ip_address="):
                        raylets[arg.split("=", 1)[1]] = pid
        assert set(raylets) == {HEAD_IP, WORKER_IP}, raylets
        return raylets

    def node_of(self, raylet_pid: int) -> str:
        """The node (its address) whose raylet has this pid."""
        for ip, pid in self.raylets.items():
            if pid == raylet_pid:
                return ip
        raise AssertionError(f"{raylet_pid} is no raylet of this cluster ({self.raylets})")

    def _processes(self) -> dict[int, list[str]]:
        """The processes started in this cluster's directory, by pid."""
        marker = str(self.temp_dir)
        found: dict[int, list[str]] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                argv = Path(f"/proc/{name}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if marker in argv and int(name) != os.getpid():
                found[int(name)] = argv.split("\0")
        return found

    def stop(self) -> None:
        """End this cluster's processes and their descendants (the workers)."""
        roots = set(self._processes())
        for _ in range(3):
            doomed = descendants(roots) | roots
            if not doomed:
                break
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in doomed:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, sig)
                time.sleep(1.0 if sig == signal.SIGTERM else 0.2)
            roots = set(self._processes())
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def parents() -> dict[int, int]:
    """pid -> parent pid of every process."""
    table: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        table[int(name)] = int(stat.rsplit(b")", 1)[1].split()[1])
    return table


def descendants(roots: set[int]) -> set[int]:
    table = parents()
    found: set[int] = set()
    frontier = set(roots)
    while frontier:
        children = {pid for pid, parent in table.items() if parent in frontier} - found
        found |= children
        frontier = children
    return found


def environ_has(pid: int, entry: str) -> bool:
    try:
        return entry.encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def processes_with(entry: str) -> list[int]:
    """Every live process (a zombie is not) whose environment holds ``entry``
    (``NAME=value``), on any node: the nodes are all on this machine."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and environ_has(int(name), entry):
            try:
                state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if state != b"Z":
                found.append(int(name))
    return found
