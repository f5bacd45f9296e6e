"""beforeRun and afterRun hooks (docs/protocol.md, "Hooks and other requests to the client").

A hook is a Python callable, sync or async, and the server wires client
requests in through the same callables. Answers are read defensively: a
malformed one is a :class:`HookError`, which fails the run with
``errorInfo.kind: "callback"``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from oma_host.core.errors import InvalidMessageError
from oma_host.core.guard import clone, copy_plain, guard_messages
from oma_host.core.messages import LLMMessage, latest_user_prompt, rewrite_latest_prompt
from oma_host.core.results import AgentRunResult, failed_result

T = TypeVar("T")

_MESSAGES = "beforeRun.messages"
LOSSY_MESSAGES = f"{_MESSAGES} cannot be forwarded without loss"


class HookError(Exception):
    """A hook raised, timed out, or answered something malformed."""


@dataclass
class BeforeRunContext:
    """What a beforeRun hook sees: copies, never the agent's own data."""

    agent_name: str
    run_id: str
    prompt: str
    messages: list[LLMMessage]
    agent: dict[str, Any]


@dataclass
class AfterRunContext:
    agent_name: str
    run_id: str
    result: AgentRunResult


BeforeRunHook = Callable[[BeforeRunContext], Any]
AfterRunHook = Callable[[AfterRunContext], Any]


async def call_hook(hook: Callable[[T], Any], context: T, timeout_s: float, name: str) -> Any:
    """Call a sync or async hook under a timeout; any failure is a HookError."""
    try:
        async with asyncio.timeout(timeout_s):
            answer = hook(context)
            if inspect.isawaitable(answer):
                answer = await answer
            return answer
    except TimeoutError:
        raise HookError(f"{name} hook did not answer within {timeout_s * 1000:.0f} ms") from None
    except HookError:
        raise
    except Exception as error:
        raise HookError(f"{name} hook failed: {error}") from error


def _field(answer: object, key: str) -> tuple[bool, Any]:
    if isinstance(answer, Mapping):
        return (key in answer, answer.get(key))
    if hasattr(answer, key):
        return (True, getattr(answer, key))
    return (False, None)


@dataclass
class BeforeRunOutcome:
    """The effective input after a beforeRun answer was applied."""

    messages: list[LLMMessage]
    messages_replaced: bool


def apply_before_run_answer(
    answer: object, sent_messages: list[LLMMessage], sent_prompt: str
) -> BeforeRunOutcome:
    """Rule 1: ``messages`` passes the guard and replaces the input. Rule 2: a
    changed ``prompt`` replaces the latest user message's text blocks.

    Raises HookError for an answer of the wrong shape, ``messages`` that fail
    the guard and ``messages: null`` alike: the hook is a callback, so its bad
    answer fails the run (with the guard's message and path) instead of being
    a request error. An answer without ``messages`` keeps the messages."""
    if answer is None:
        return BeforeRunOutcome(sent_messages, False)
    if not isinstance(answer, Mapping) and not hasattr(answer, "prompt"):
        raise HookError(
            f"beforeRun answer must be null or an object with a prompt, got {type(answer).__name__}"
        )
    has_prompt, prompt = _field(answer, "prompt")
    if not has_prompt or not isinstance(prompt, str):
        raise HookError("beforeRun answer.prompt must be a string")
    has_messages, new_messages = _field(answer, "messages")
    messages = sent_messages
    replaced = False
    if has_messages:
        if new_messages is None:
            raise HookError(f"{_MESSAGES} must be an array, got null")
        try:
            messages = guard_messages(new_messages, _MESSAGES)
        except InvalidMessageError as error:
            raise HookError(str(error)) from None
        replaced = messages != sent_messages
    if prompt != sent_prompt:
        messages = rewrite_latest_prompt(messages, prompt)
    return BeforeRunOutcome(messages, replaced)


def make_before_run_context(
    agent_name: str, run_id: str, messages: list[LLMMessage], agent_view: dict[str, Any]
) -> BeforeRunContext:
    return BeforeRunContext(
        agent_name=agent_name,
        run_id=run_id,
        prompt=latest_user_prompt(messages),
        messages=clone(messages),
        agent=clone(agent_view),
    )


_result_adapter: TypeAdapter[AgentRunResult] | None = None


def _check_result_shape(candidate: dict[str, Any]) -> None:
    """AgentRunResult, field by field and strictly (a count is an integer, a
    status code one of the five); raises HookError naming the first problem."""
    global _result_adapter
    if _result_adapter is None:
        _result_adapter = TypeAdapter(AgentRunResult)
    try:
        _result_adapter.validate_python(candidate, strict=True)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(the answer)"
        raise HookError(f"afterRun answer.{where}: {first['msg']}") from None


def read_after_run_answer(answer: object, original: AgentRunResult) -> AgentRunResult:
    """None keeps the result; otherwise the answer must be a whole AgentRunResult
    (``identity`` may be left out: the run's own is kept)."""
    if answer is None:
        return original
    if not isinstance(answer, Mapping):
        raise HookError(
            f"afterRun answer must be null or an AgentRunResult, got {type(answer).__name__}"
        )
    try:
        result: dict[str, Any] = copy_plain(dict(answer), "afterRun")
    except InvalidMessageError as error:
        raise HookError(f"afterRun answer: {error}") from None
    result.setdefault("identity", original["identity"])
    _check_result_shape(result)
    if result["messages"]:
        try:
            result["messages"] = guard_messages(result["messages"], "afterRun.messages")
        except InvalidMessageError as error:
            raise HookError(f"afterRun answer: {error}") from None
    return result  # type: ignore[return-value]


@dataclass(frozen=True)
class RunHooks:
    """An agent's hooks and what they are told besides the run: its name,
    its config as clients may see it, and, for a backend that takes a string
    prompt only, the backend's description (a beforeRun answer may then
    rewrite the prompt but not replace the messages)."""

    agent_name: str
    agent_view: dict[str, Any]
    before_run: BeforeRunHook | None
    after_run: AfterRunHook | None
    timeout_s: float
    string_only: str | None


async def run_with_hooks(
    hooks: RunHooks,
    run_id: str,
    messages: list[LLMMessage],
    run: Callable[[list[LLMMessage]], Awaitable[AgentRunResult]],
) -> AgentRunResult:
    """``run`` the messages as the beforeRun answer leaves them, and return
    the result as the afterRun answer leaves it (a cancelled run's is not
    offered). A hook that fails fails the run (``callback``)."""
    if hooks.before_run is not None:
        context = make_before_run_context(hooks.agent_name, run_id, messages, hooks.agent_view)
        sent_prompt = context.prompt  # the hook may change its context object
        try:
            answer = await call_hook(hooks.before_run, context, hooks.timeout_s, "beforeRun")
            outcome = apply_before_run_answer(answer, messages, sent_prompt)
        except HookError as error:
            return failed_result(run_id, "callback", str(error))
        if hooks.string_only is not None and outcome.messages_replaced:
            return failed_result(
                run_id,
                "callback",
                f"{LOSSY_MESSAGES}: agent {hooks.agent_name!r} has {hooks.string_only}, "
                "which takes a string prompt; return only a prompt rewrite",
            )
        messages = outcome.messages
    result = await run(messages)
    if hooks.after_run is not None and result["status"]["code"] != "cancelled":
        context_after = AfterRunContext(hooks.agent_name, run_id, clone(result))
        try:
            answer = await call_hook(hooks.after_run, context_after, hooks.timeout_s, "afterRun")
            result = read_after_run_answer(answer, result)
        except HookError as error:
            return failed_result(run_id, "callback", str(error))
    return result
