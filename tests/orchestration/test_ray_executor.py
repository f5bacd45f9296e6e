"""oma/runTasks with executor {kind: "ray"}, driven through the real
``oma-host`` over stdio against a real two-node Ray cluster on this machine
(oma_host/testing/ray_cluster.py): the dependency order and results in
the local executor's shapes, a failing member failing its dependents,
resources that force tasks onto different nodes, an ACP member (the
scripted TypeScript-SDK agent), an LLM member placed on Ray, cancellation
mid-graph and a killed worker with no member process left on any node, the
refusals (no cluster, a task no node can hold, resources under the local
executor), and Ray not installed.

Ray starts slowly, so the module shares one cluster. Without Ray installed
the module is skipped, except under CI (``CI`` set, as ``.ci/run`` does),
where it must run.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient, RpcError
from oma_host.testing.ray_cluster import (
    HEAD_IP,
    WORKER_IP,
    RayCluster,
    parents,
    processes_with,
)
from oma_host.testing.simulator import Simulator
from tests.npm_packages import ensure_npm_packages
from tests.providers.helpers import llm_config
from tests.server.helpers import wait_dead_async

if importlib.util.find_spec("ray") is None and not os.environ.get("CI"):
    pytest.skip(
        "Ray is not installed (pip install 'oma-host[ray]'); CI runs these",
        allow_module_level=True,
    )

pytestmark = pytest.mark.timeout(300)

# A member that says which node ran it: Ray sets RAY_RAYLET_PID in its
# workers' environment, and the member inherits it (unset in the host).
NODE_ECHO = 'printf "raylet=%s " "${RAY_RAYLET_PID:-host}"; cat'


def member(name: str, script: str, **backend: Any) -> dict[str, Any]:
    return {
        "name": name,
        "backend": {"kind": "process", "command": "sh", "args": ["-c", script], **backend},
    }


def raylet_in(output: str) -> int:
    found = re.search(r"raylet=(\d+)", output)
    assert found is not None, output
    return int(found.group(1))


def events(client: HostClient, kind: str) -> list[dict[str, Any]]:
    return [
        n["params"]
        for n in client.notifications
        if n["method"] == "oma/progress" and n["params"]["type"] == kind
    ]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    started = RayCluster.start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def acp_agent_script() -> str:
    """The scripted ACP agent of the interop tests (tests/interop/acp_agent)."""
    folder = Path(__file__).resolve().parents[1] / "interop" / "acp_agent"
    ensure_npm_packages(folder, "@agentclientprotocol/sdk/package.json")
    return str(folder / "agent.mjs")


def ray(cluster: RayCluster, **fields: Any) -> dict[str, Any]:
    return {"kind": "ray", "address": cluster.address, **fields}


def shape(value: Any) -> Any:
    """A result's shape: its keys, nested, without the values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value[:1]]
    return type(value).__name__


GRAPH = [
    {"id": "a", "title": "A", "description": "on the head", "assignee": "echo"},
    {"id": "b", "title": "B", "description": "on the worker", "assignee": "echo"},
    {"id": "c", "title": "C", "description": "breaks", "assignee": "fail", "dependsOn": ["a"]},
    {"id": "d", "title": "D", "description": "after c", "assignee": "echo", "dependsOn": ["c"]},
    {"id": "e", "title": "E", "description": "joins", "assignee": "echo", "dependsOn": ["a", "b"]},
]
TEAM = {
    "agents": [member("echo", NODE_ECHO), member("fail", "echo broken >&2; exit 4")],
    "sharedMemory": True,
    "maxConcurrency": 4,
}


async def test_a_graph_runs_in_order_with_the_local_results_and_a_failure_skipping_dependents(
    cluster: RayCluster, host: HostClient
) -> None:
    tasks = [dict(task) for task in GRAPH]
    tasks[0]["resources"] = {"custom": {"head": 1}}
    tasks[1]["resources"] = {"custom": {"worker2": 1}}
    on_ray = await host.request(
        "oma/runTasks",
        {"team": TEAM, "tasks": tasks, "progress": True, "executor": ray(cluster)},
        timeout=240,
    )
    local = await host.request("oma/runTasks", {"team": TEAM, "tasks": GRAPH}, timeout=60)

    status = {task["id"]: task["status"] for task in on_ray["tasks"]}
    assert status == {
        "a": "completed",
        "b": "completed",
        "c": "failed",
        "d": "skipped",
        "e": "completed",
    }
    by_id = {task["id"]: task for task in on_ray["tasks"]}
    local_by_id = {task["id"]: task for task in local["tasks"]}
    # The same reasons and result shapes as the local executor's.
    assert by_id["c"]["reason"] == local_by_id["c"]["reason"]
    assert "exited with code 4" in by_id["c"]["reason"]
    assert by_id["c"]["result"]["errorInfo"] == local_by_id["c"]["result"]["errorInfo"]
    assert by_id["d"]["reason"] == "dependency 'c' did not complete"
    for task_id in ("a", "b", "c", "e"):
        assert shape(by_id[task_id]) == shape(local_by_id[task_id])
        assert by_id[task_id]["result"]["identity"]["runId"].endswith(f":{task_id}")
    assert shape(on_ray) == shape(local)

    # The outputs are the local ones but for the node each names.
    def unplaced(text: str) -> str:
        return re.sub(r"raylet=\S+ ", "", text)

    for task_id in ("a", "b", "e"):
        assert unplaced(by_id[task_id]["result"]["output"]) == unplaced(
            local_by_id[task_id]["result"]["output"]
        )
    assert "raylet=host" in local_by_id["a"]["result"]["output"]
    # The resources placed A on the head and B on the other node.
    assert cluster.node_of(raylet_in(by_id["a"]["result"]["output"])) == HEAD_IP
    assert cluster.node_of(raylet_in(by_id["b"]["result"]["output"])) == WORKER_IP
    # E ran after A and B, and its prompt carried their outputs.
    assert "### A\nraylet=" in by_id["e"]["result"]["output"]
    started = [e["data"]["taskId"] for e in events(host, "task_start")]
    completed = [e["data"]["taskId"] for e in events(host, "task_complete")]
    assert sorted(started) == ["a", "b", "c", "e"]
    assert completed.index("a") < started.index("c")
    assert max(completed.index("a"), completed.index("b")) < started.index("e")
    assert [e["data"]["taskId"] for e in events(host, "task_skipped")] == ["d"]


async def test_the_executors_resources_under_a_tasks_own_send_tasks_to_their_nodes(
    cluster: RayCluster, host: HostClient
) -> None:
    # The executor sends every task to the second node, unless a task's own
    # custom resources say otherwise; both run at once, one on each node.
    team = {"agents": [member("slow", f"sleep 1; {NODE_ECHO}")], "maxConcurrency": 2}
    tasks = [
        {"id": "one", "title": "one", "description": "x", "resources": {"custom": {"head": 1}}},
        {"id": "two", "title": "two", "description": "y"},
    ]
    result = await host.request(
        "oma/runTasks",
        {
            "team": team,
            "tasks": tasks,
            "executor": ray(cluster, resources={"numCpus": 1, "custom": {"worker2": 1}}),
        },
        timeout=240,
    )
    assert result["success"], result
    nodes = {t["id"]: cluster.node_of(raylet_in(t["result"]["output"])) for t in result["tasks"]}
    assert nodes == {"one": HEAD_IP, "two": WORKER_IP}


async def test_an_acp_member_runs_on_a_worker(
    cluster: RayCluster, host: HostClient, acp_agent_script: str
) -> None:
    team = {
        "agents": [
            {
                "name": "coder",
                "backend": {"kind": "acp", "command": "node", "args": [acp_agent_script]},
            },
            member("reader", NODE_ECHO),
        ],
        "sharedMemory": True,
    }
    tasks = [
        {"id": "ask", "title": "Ask", "description": "[whoami]", "assignee": "coder"},
        {
            "id": "read",
            "title": "Read",
            "description": "what the agent said",
            "assignee": "reader",
            "dependsOn": ["ask"],
            "resources": {"custom": {"worker2": 1}},
        },
    ]
    result = await host.request(
        "oma/runTasks",
        {"team": team, "tasks": tasks, "executor": ray(cluster)},
        timeout=240,
    )
    assert result["success"], result
    ask, read = result["tasks"]
    assert re.fullmatch(r"pid=\d+ session=\S+ turn=1", ask["result"]["output"].strip())
    assert ask["result"]["status"] == {"code": "ok"}
    assert "### Ask\npid=" in read["result"]["output"]
    assert cluster.node_of(raylet_in(read["result"]["output"])) == WORKER_IP


async def test_an_llm_member_placed_on_ray_runs_there_with_its_key_kept_out(
    cluster: RayCluster, host: HostClient, sim: Simulator
) -> None:
    key = "sk-ant-ray-member-0123456789"
    team = {"agents": [llm_config(sim, "anthropic", name="writer", apiKey=key)]}
    tasks = [{"id": "w", "title": "Write", "description": f"say hi (the key is {key})"}]
    result = await host.request(
        "oma/runTasks",
        {"team": team, "tasks": tasks, "executor": ray(cluster, placement="ray")},
        timeout=240,
    )
    assert result["success"], result
    assert len(sim.requests) == 1  # the run reached the provider, from the worker
    headers = {name.lower(): value for name, value in sim.requests[0].headers.items()}
    assert headers["x-api-key"] == key
    assert key not in str(result)
    assert result["tokenUsage"]["input_tokens"] > 0


async def test_cancelling_mid_graph_ends_the_members_process_trees_on_every_node(
    cluster: RayCluster, host: HostClient, tmp_path: Path
) -> None:
    tag = f"OMA_RAY_TEST={uuid.uuid4().hex}"
    name, value = tag.split("=")
    started = tmp_path / "started"
    # Each member starts a child in its group and a daemon in a session of
    # its own, records the pids, then waits for ever.
    script = (
        "sleep 300 & child=$!; setsid sleep 300 & daemon=$!; "
        f'echo "$$ $child $daemon" >> {started}; wait'
    )
    team = {
        "agents": [
            member("quick", "cat"),
            member("stuck", script, env={name: value}),
        ],
        "maxConcurrency": 3,
    }
    tasks = [
        {"id": "a", "title": "A", "description": "x", "assignee": "quick"},
        {
            "id": "b",
            "title": "B",
            "description": "y",
            "assignee": "stuck",
            "dependsOn": ["a"],
            "resources": {"custom": {"head": 1}},
        },
        {
            "id": "c",
            "title": "C",
            "description": "z",
            "assignee": "stuck",
            "dependsOn": ["a"],
            "resources": {"custom": {"worker2": 1}},
        },
        {"id": "d", "title": "D", "description": "w", "assignee": "quick", "dependsOn": ["b"]},
    ]
    msg_id, answer = host.start_request(
        "oma/runTasks", {"team": team, "tasks": tasks, "executor": ray(cluster)}
    )
    for _ in range(2400):  # both stuck members running, one on each node
        if started.exists() and len(started.read_text().splitlines()) == 2:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the stuck members never started")
    pids = [int(pid) for line in started.read_text().splitlines() for pid in line.split()]
    assert len(processes_with(tag)) >= 6
    host.cancel(msg_id)
    reply = await asyncio.wait_for(answer, 120)
    error = reply["error"]
    assert error["code"] == -32800
    partial = {task["id"]: task for task in error["data"]["partial"]["tasks"]}
    assert partial["a"]["status"] == "completed"
    for task_id in ("b", "c"):
        assert partial[task_id]["status"] == "failed"
        assert partial[task_id]["result"]["status"]["code"] == "cancelled"
    assert partial["d"]["status"] == "skipped"
    for pid in pids:
        assert await wait_dead_async(pid, 30), f"{pid} outlived the cancelled run"
    assert processes_with(tag) == []


async def test_a_killed_worker_is_a_failed_task_and_its_member_tree_ends(
    cluster: RayCluster, host: HostClient, tmp_path: Path
) -> None:
    tag = f"OMA_RAY_TEST={uuid.uuid4().hex}"
    name, value = tag.split("=")
    started = tmp_path / "started"
    script = f'sleep 300 & echo "$$ $!" > {started}; wait'
    team = {"agents": [member("stuck", script, env={name: value}), member("after", "cat")]}
    tasks = [
        {"id": "a", "title": "A", "description": "x", "assignee": "stuck"},
        {"id": "b", "title": "B", "description": "y", "assignee": "after", "dependsOn": ["a"]},
    ]
    request = asyncio.ensure_future(
        host.request(
            "oma/runTasks",
            {"team": team, "tasks": tasks, "executor": ray(cluster)},
            timeout=240,
        )
    )
    for _ in range(2400):
        if started.exists() and started.read_text().strip():
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the member never started")
    member_pid, child_pid = (int(pid) for pid in started.read_text().split())
    table = parents()
    runner = table[member_pid]
    worker = table[runner]
    assert worker not in cluster.raylets.values()
    assert table[worker] in cluster.raylets.values()  # a Ray worker, below a raylet
    os.kill(worker, signal.SIGKILL)  # what ray.cancel(force=True) does to a task's worker
    result = await request
    a, b = result["tasks"]
    assert a["status"] == "failed"
    assert a["result"]["errorInfo"]["kind"] == "executor"
    assert a["result"]["status"]["code"] == "error"
    assert b["status"] == "skipped"
    for pid in (member_pid, child_pid, runner):
        assert await wait_dead_async(pid, 30), f"{pid} outlived its killed worker"
    assert processes_with(tag) == []


async def test_the_runners_a_host_started_end_when_it_goes(cluster: RayCluster) -> None:
    before = set(_runners())
    client = await HostClient.spawn()
    try:
        await client.initialize()
        team = {"agents": [member("echo", "cat")]}
        tasks = [
            {"title": "one", "description": "x", "resources": {"custom": {"head": 1}}},
            {"title": "two", "description": "y", "resources": {"custom": {"worker2": 1}}},
        ]
        done = await client.request(
            "oma/runTasks", {"team": team, "tasks": tasks, "executor": ray(cluster)}, timeout=240
        )
        assert done["success"]
        runners = set(_runners()) - before
        assert len(runners) == 2  # one per worker, kept warm between tasks
    finally:
        await client.close()
    # ray.init runs off the main thread on purpose; Ray's warning about it is not logged.
    assert "SIGTERM handler" not in await client.stderr_text()
    # The host's job ends with it: Ray ends its workers, each runner its own.
    for pid in runners:
        assert await wait_dead_async(pid, 60), f"runner {pid} outlived the host"


async def test_refusals_name_the_field_and_the_host_keeps_serving(
    cluster: RayCluster, host: HostClient
) -> None:
    team = {"agents": [member("echo", "cat")]}
    task = {"title": "t", "description": "d"}
    nowhere = f"{HEAD_IP}:1"
    cases = [
        (
            {"executor": ray(cluster, address=nowhere)},
            f"params.executor.address: no Ray cluster answers at {nowhere}",
        ),
        (
            {
                "tasks": [{**task, "resources": {"custom": {"gpu-box": 1}}}],
                "executor": ray(cluster),
            },
            "params.tasks[0].resources: no alive node of the Ray cluster",
        ),
        (
            {"tasks": [{**task, "resources": {"numCpus": 1}}]},
            'params.tasks[0].resources: resources are for executor.kind "ray"',
        ),
        (
            {"executor": {"kind": "ray", "adress": cluster.address}},
            "params.executor.adress: is not a known field; did you mean address?",
        ),
        (
            {"executor": ray(cluster, runtimeEnv={"env_vars": {"A": 1}})},
            "params.executor.runtimeEnv: runtime_env['env_vars'] must be of type Dict[str, str]",
        ),
    ]
    for fields, message in cases:
        params = {"team": team, "tasks": [task], **fields}
        with pytest.raises(RpcError) as caught:
            await host.request("oma/runTasks", params, timeout=120)
        assert caught.value.code == -32602
        assert message in caught.value.message
    done = await host.request(
        "oma/runTasks", {"team": team, "tasks": [task], "executor": ray(cluster)}, timeout=240
    )
    assert done["success"]


async def test_without_ray_the_executor_is_invalid_params_naming_the_extra(
    tmp_path: Path,
) -> None:
    # Ray made unimportable: a `ray` package first on the path whose import
    # raises ImportError, as Python does where Ray is not installed.
    fake = tmp_path / "no-ray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named ray (simulated)')\n")
    path = os.pathsep.join([str(fake.parent), str(Path(__file__).resolve().parents[2])])
    client = await HostClient.spawn(env={"PYTHONPATH": path})
    try:
        await client.initialize()
        team = {"agents": [member("echo", "cat")]}
        params = {
            "team": team,
            "tasks": [{"title": "t", "description": "d"}],
            "executor": {"kind": "ray", "address": "127.0.0.1:6379"},
        }
        with pytest.raises(RpcError) as caught:
            await client.request("oma/runTasks", params)
        assert caught.value.code == -32602
        assert "pip install 'oma-host[ray]'" in caught.value.message
        assert "params.executor.kind" in caught.value.message
        # The local executor is untouched by it.
        done = await client.request("oma/runTasks", {"team": team, "tasks": params["tasks"]})
        assert done["success"]
    finally:
        await client.close()


def _runners() -> list[int]:
    """Member runners still alive on this machine."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if b"oma_host.orchestration.ray_member" in argv:
            found.append(int(name))
    return found
