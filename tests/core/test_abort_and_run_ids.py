"""The abort path every run takes (the signal cancels the run's own task,
the way asyncio.timeout does) and the run ids (a random version-4 UUID's hex,
without a UUID object or a system call per id)."""

from __future__ import annotations

import asyncio
import os
import uuid

from oma_host.core.abort import AbortSignal
from oma_host.core.agent import Agent
from oma_host.core.run_ids import new_run_id


async def test_many_runs_on_one_signal_leave_no_waiters_behind() -> None:
    agent = Agent({"name": "echo", "provider": "test", "model": "echo"})
    abort = AbortSignal()
    results = await asyncio.gather(*(agent.run(f"run {n}", abort=abort) for n in range(20)))
    assert all(result["success"] for result in results)
    assert len({result["identity"]["runId"] for result in results}) == 20
    assert not abort._listeners  # every run took its listener back


async def test_a_run_aborted_mid_way_is_cancelled_with_its_partial_result() -> None:
    agent = Agent({"name": "slow", "provider": "test", "model": "slow-echo"})
    abort = AbortSignal()
    run = asyncio.ensure_future(agent.run("hello", abort=abort))
    await asyncio.sleep(0.12)
    assert not run.done()  # slow-echo takes seconds
    abort.abort()
    result = await asyncio.wait_for(run, 5)
    assert result["status"]["code"] == "cancelled" and result["aborted"] is True
    assert agent.state["status"] == "idle"


async def test_an_aborted_run_leaves_its_task_as_it_was() -> None:
    """The cancellation the signal asked for is taken back: the task that
    awaited the run goes on (to answer, say) with nothing pending."""
    agent = Agent({"name": "slow", "provider": "test", "model": "slow-echo"})
    abort = AbortSignal()

    async def run_then_go_on() -> tuple[str, int]:
        result = await agent.run("hello", abort=abort)
        await asyncio.sleep(0.01)  # not cancelled: the request was ours, and taken back
        task = asyncio.current_task()
        assert task is not None
        return result["status"]["code"], task.cancelling()

    caller = asyncio.ensure_future(run_then_go_on())
    await asyncio.sleep(0.12)
    abort.abort()
    assert await asyncio.wait_for(caller, 5) == ("cancelled", 0)


async def test_a_run_cancelled_from_outside_is_cancelled_not_aborted() -> None:
    """Cancelling the awaiting task (shutdown, a timeout around the call) is
    not the signal: it goes on as a CancelledError, and a signal that fires
    during the cancellation's cleanup does not cancel a second time."""
    agent = Agent({"name": "slow", "provider": "test", "model": "slow-echo"})
    abort = AbortSignal()
    run = asyncio.ensure_future(agent.run("hello", abort=abort))
    await asyncio.sleep(0.12)
    run.cancel()
    abort.abort()  # the same pass: the task is already being cancelled
    done, _ = await asyncio.wait({run}, timeout=5)
    assert done and run.cancelled()
    assert not abort._listeners


def test_run_ids_are_uuid4_hex_and_unique() -> None:
    ids = {new_run_id() for _ in range(5000)}
    assert len(ids) == 5000
    for run_id in list(ids)[:500]:
        assert run_id.startswith("run_") and len(run_id) == 36
        value = uuid.UUID(hex=run_id[4:])
        assert value.version == 4 and value.variant == uuid.RFC_4122


def test_a_forked_child_draws_run_ids_of_its_own() -> None:
    new_run_id()  # the parent holds a block of random bytes now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next id and leave at once
        os.write(write, new_run_id().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert child != new_run_id()
    assert child.startswith("run_") and len(child) == 36


async def test_a_step_that_fails_fails_the_run_and_cancelling_the_run_reaches_the_step() -> None:
    from oma_host.core.abort import Aborted, unless_aborted

    async def fails() -> None:
        raise ValueError("boom")

    try:
        await unless_aborted(fails(), AbortSignal())
    except ValueError as error:
        assert str(error) == "boom"
    else:
        raise AssertionError("the step's error must come out")

    ended = asyncio.Event()

    async def waits() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            ended.set()

    outer = asyncio.ensure_future(unless_aborted(waits(), AbortSignal()))
    await asyncio.sleep(0.01)
    outer.cancel()
    await asyncio.gather(outer, return_exceptions=True)
    assert outer.cancelled() and ended.is_set()  # the step was cancelled and cleaned up

    abort = AbortSignal()
    aborted = asyncio.ensure_future(unless_aborted(waits(), abort))
    await asyncio.sleep(0.01)
    abort.abort()
    try:
        await aborted
    except Aborted:
        pass
    else:
        raise AssertionError("an aborted step raises Aborted")
