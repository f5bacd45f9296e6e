"""The ACP methods the door serves, each request validated with the schema's model.

A malformed request is -32602 with the model's ``errors``, as the
``agent-client-protocol`` library's router answers. ``session/prompt`` is the
hot path: a prompt of plain text blocks in the shape :func:`plain_text_prompt`
takes reaches the door with no model built.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import (
    AuthenticateRequest,
    CancelNotification,
    CloseSessionRequest,
    DeleteSessionRequest,
    ForkSessionRequest,
    InitializeRequest,
    ListSessionsRequest,
    LoadSessionRequest,
    LogoutRequest,
    NewSessionRequest,
    PromptRequest,
    ResumeSessionRequest,
    SetSessionConfigOptionBooleanRequest,
    SetSessionConfigOptionSelectRequest,
    SetSessionModeRequest,
)
from pydantic import BaseModel

from oma_host.acp_server.content import TextPrompt
from oma_host.acp_server.editor import request_params
from oma_host.acp_server.wire import NotificationHandler, RequestHandler

if TYPE_CHECKING:
    from oma_host.acp_server.door import OmaAcpAgent

_PROMPT_KEYS = frozenset({"sessionId", "prompt"})
_TEXT_BLOCK_KEYS = frozenset({"type", "text"})
_SET_OPTION_MODELS = (SetSessionConfigOptionBooleanRequest, SetSessionConfigOptionSelectRequest)


def plain_text_prompt(params: Any) -> tuple[str, TextPrompt] | None:
    """The session id and texts of a ``session/prompt`` whose params are
    exactly ``{sessionId: string, prompt: [{type: "text", text: string}, ...]}``,
    which ``PromptRequest`` accepts as they are; None for anything else
    (``_meta``, annotations, other blocks, the snake_case names the models
    also take, a wrong type anywhere), which goes to the model."""
    if type(params) is not dict or params.keys() != _PROMPT_KEYS:
        return None
    session_id, blocks = params["sessionId"], params["prompt"]
    if type(session_id) is not str or type(blocks) is not list:
        return None
    texts: list[str] = []
    for block in blocks:
        if type(block) is not dict or block.keys() != _TEXT_BLOCK_KEYS:
            return None
        text = block["text"]
        if block["type"] != "text" or type(text) is not str:
            return None
        texts.append(text)
    return session_id, TextPrompt(texts)


def _kwargs(request: BaseModel, *models: type[BaseModel]) -> dict[str, Any]:
    """A validated request as the door method's keyword arguments, as the
    library's router passed them: the fields the models share, then the
    entries of ``_meta``."""
    shared = [name for name in models[0].model_fields if name != "field_meta"]
    shared = [name for name in shared if all(name in model.model_fields for model in models)]
    kwargs = {name: getattr(request, name) for name in shared}
    if meta := getattr(request, "field_meta", None):
        kwargs.update(meta)
    return kwargs


def _answer(result: Any) -> Any:
    """A result as the library's connection dumped it (unset fields left out)."""
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    return result


def _normalized(result: Any) -> Any:
    """A result as the library's ``normalize_result`` routes dumped it
    (defaults left out, None as an empty object)."""
    if result is None:
        return {}
    return request_params(result) if isinstance(result, BaseModel) else result


def _route(
    model: type[BaseModel],
    method: Callable[..., Awaitable[Any]],
    dump: Callable[[Any], Any] = _answer,
) -> RequestHandler:
    async def handle(params: Any) -> Any:
        request = model.model_validate(params)
        return dump(await method(**_kwargs(request, model)))

    return handle


def _check_objects(params: dict[str, Any], key: str, prefix: str = "") -> None:
    """-32602 when ``params[key]`` is given and is not an object (null is
    taken as absent)."""
    value = params.get(key)
    if value is not None and not isinstance(value, dict):
        what = type(value).__name__
        what = {"str": "a string", "list": "an array", "bool": "a boolean"}.get(what, "a number")
        raise RequestError.invalid_params(
            {"message": f"{prefix}{key} must be an object, not {what}", "path": prefix + key}
        )


# The door's extension method that rewinds a session (docs/acp.md).
REWIND_METHOD = "_oma/session/rewind"


def _rewind_params(params: Any) -> tuple[str, int, bool]:
    """``{sessionId, keepTurns, restoreFiles?}`` of ``_oma/session/rewind``;
    -32602 naming the field that is missing or of the wrong type."""

    def wrong(path: str, problem: str) -> RequestError:
        return RequestError.invalid_params(
            {"type": "InvalidParams", "message": f"{path} {problem}", "path": path}
        )

    if not isinstance(params, dict):
        raise RequestError.invalid_params(
            {"type": "InvalidParams", "message": "params must be an object"}
        )
    unknown = sorted(set(params) - {"sessionId", "keepTurns", "restoreFiles", "_meta"})
    if unknown:
        raise wrong(unknown[0], "is not a parameter of _oma/session/rewind")
    session_id, keep, restore = (
        params.get("sessionId"),
        params.get("keepTurns"),
        params.get("restoreFiles", False),
    )
    if not isinstance(session_id, str):
        raise wrong("sessionId", "must be a string")
    if type(keep) is not int:
        raise wrong("keepTurns", "must be an integer (the turns kept from the start)")
    if keep < 0:
        raise wrong("keepTurns", f"must be 0 or more; {keep} is negative")
    if type(restore) is not bool:
        raise wrong("restoreFiles", "must be a boolean")
    return session_id, keep, restore


# The requests and notifications the door serves, by method name.
DoorRoutes = tuple[dict[str, RequestHandler], dict[str, NotificationHandler]]


def door_routes(door: OmaAcpAgent) -> DoorRoutes:
    """The requests and notifications the door serves, by method name."""

    async def prompt(params: Any) -> Any:
        # The door answers a prompt in wire form (no model to dump).
        plain = plain_text_prompt(params)
        if plain is not None:
            session_id, text_prompt = plain
            return await door.prompt(text_prompt, session_id)
        request = PromptRequest.model_validate(params)
        return await door.prompt(**_kwargs(request, PromptRequest))

    async def set_config_option(params: Any) -> Any:
        # As the library's router: a boolean option by its "type", else a select.
        is_boolean = isinstance(params, dict) and params.get("type") == "boolean"
        model = _SET_OPTION_MODELS[0] if is_boolean else _SET_OPTION_MODELS[1]
        request = model.model_validate(params)
        answer = await door.set_config_option(**_kwargs(request, *_SET_OPTION_MODELS))
        return _normalized(answer)

    async def initialize(params: Any) -> Any:
        # The schema's model puts its default in place of capabilities of the
        # wrong type; the door says what was wrong instead.
        if isinstance(params, dict):
            _check_objects(params, "clientCapabilities")
            capabilities = params.get("clientCapabilities")
            if isinstance(capabilities, dict):
                for group in ("fs", "auth", "_meta"):
                    _check_objects(capabilities, group, "clientCapabilities.")
        request = InitializeRequest.model_validate(params)
        answer = await door.initialize(**_kwargs(request, InitializeRequest))
        # What the library's model does not know (``session.compaction``,
        # ``session.notices``) is read from the wire form.
        if isinstance(params, dict) and isinstance(params.get("clientCapabilities"), dict):
            door.accept_features(params["clientCapabilities"])
        return _answer(answer)

    async def cancel(params: Any) -> None:
        request = CancelNotification.model_validate(params)
        await door.cancel(**_kwargs(request, CancelNotification))

    async def rewind(params: Any) -> Any:
        return await door.rewind_session(*_rewind_params(params))

    requests: dict[str, RequestHandler] = {
        "initialize": initialize,
        "authenticate": _route(AuthenticateRequest, door.authenticate, _normalized),
        "logout": _route(LogoutRequest, door.logout, _normalized),
        "session/new": _route(NewSessionRequest, door.new_session),
        "session/load": _route(LoadSessionRequest, door.load_session, _normalized),
        "session/list": _route(ListSessionsRequest, door.list_sessions),
        "session/resume": _route(ResumeSessionRequest, door.resume_session),
        "session/fork": _route(ForkSessionRequest, door.fork_session),
        "session/close": _route(CloseSessionRequest, door.close_session, _normalized),
        "session/delete": _route(DeleteSessionRequest, door.delete_session, _normalized),
        "session/prompt": prompt,
        "session/set_config_option": set_config_option,
        "session/set_mode": _route(SetSessionModeRequest, door.set_mode, _normalized),
        REWIND_METHOD: rewind,
    }
    return requests, {"session/cancel": cancel}
