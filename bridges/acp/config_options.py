"""An ACP session's models and modes, as the agent reports them and a client changes them.

:class:`SessionChoices` keeps what was last reported, as ``configOptions`` or
the older ``modes`` and ``models``, and turns a change into the request the
agent understands. A value the agent never offered is refused here, naming what
it offers.
"""

from __future__ import annotations

import copy
from typing import Any

from acp.schema import ConfigOptionUpdate, CurrentModeUpdate


class ChoiceError(ValueError):
    """A configId or value the agent does not offer; the message says what it does."""


def _values(option: dict[str, Any]) -> list[str]:
    """The value ids of a select option, its groups flattened."""
    values: list[str] = []
    for entry in option.get("options") or []:
        if isinstance(entry, dict) and "group" in entry:
            values.extend(str(inner.get("value")) for inner in entry.get("options") or [])
        elif isinstance(entry, dict):
            values.append(str(entry.get("value")))
    return values


class SessionChoices:
    """What the agent last reported of its session's choices."""

    def __init__(self) -> None:
        self.config_options: list[dict[str, Any]] | None = None
        self.modes: dict[str, Any] | None = None
        self.models: dict[str, Any] | None = None

    def take(self, answer: Any) -> None:
        """The fields an answer to session/new, load or resume carries."""
        if not isinstance(answer, dict):
            return
        if isinstance(answer.get("configOptions"), list):
            self.config_options = [o for o in answer["configOptions"] if isinstance(o, dict)]
        if isinstance(answer.get("modes"), dict):
            self.modes = dict(answer["modes"])
        if isinstance(answer.get("models"), dict):
            self.models = dict(answer["models"])

    def observe(self, update: Any) -> None:
        """A typed session/update: the ones that change a choice are kept."""
        if isinstance(update, ConfigOptionUpdate):
            self.config_options = [
                o.model_dump(mode="json", by_alias=True, exclude_none=True)
                for o in update.config_options
            ]
        elif isinstance(update, CurrentModeUpdate) and self.modes is not None:
            self.modes["currentModeId"] = update.current_mode_id

    def view(self) -> dict[str, Any]:
        """For ``agent/state``: the fields the agent reported (copies)."""
        shown: dict[str, Any] = {}
        if self.config_options is not None:
            shown["configOptions"] = copy.deepcopy(self.config_options)
        if self.modes is not None:
            shown["modes"] = copy.deepcopy(self.modes)
        if self.models is not None:
            shown["models"] = copy.deepcopy(self.models)
        return shown

    def _option(self, config_id: str) -> dict[str, Any] | None:
        return next((o for o in self.config_options or [] if o.get("id") == config_id), None)

    def known_ids(self) -> list[str]:
        ids = [str(o.get("id")) for o in self.config_options or []]
        if self.modes is not None and "mode" not in ids:
            ids.append("mode")
        if self.models is not None and "model" not in ids:
            ids.append("model")
        return ids

    def request(
        self, session_id: str, config_id: str, value: str | bool
    ) -> tuple[str, dict[str, Any]]:
        """The method and params that set ``config_id`` to ``value``."""
        option = self._option(config_id)
        if option is not None:
            params: dict[str, Any] = {"sessionId": session_id, "configId": config_id}
            if option.get("type") == "boolean":
                if not isinstance(value, bool):
                    raise ChoiceError(f"{config_id!r} is a boolean option; send true or false")
                return "session/set_config_option", {**params, "type": "boolean", "value": value}
            values = _values(option)
            if not isinstance(value, str) or value not in values:
                raise ChoiceError(
                    f"{value!r} is not a value of {config_id!r}; the agent offers: "
                    + (", ".join(values) or "none")
                )
            return "session/set_config_option", {**params, "value": value}
        legacy = {"mode": (self.modes, "availableModes", "modeId", "session/set_mode")}
        legacy["model"] = (self.models, "availableModels", "modelId", "session/set_model")
        if config_id in legacy and legacy[config_id][0] is not None:
            state, listed, key, method = legacy[config_id]
            assert state is not None
            ids = [str(e.get(key)) for e in state.get(listed) or [] if isinstance(e, dict)]
            if not isinstance(value, str) or value not in ids:
                raise ChoiceError(
                    f"{value!r} is not a {config_id} of this agent; it offers: "
                    + (", ".join(ids) or "none")
                )
            return method, {"sessionId": session_id, key: value}
        known = ", ".join(self.known_ids()) or "none (the agent reported no configOptions)"
        raise ChoiceError(f"the agent has no option {config_id!r}; its options: {known}")

    def applied(self, method: str, params: dict[str, Any], answer: Any) -> None:
        """Record a change the agent accepted."""
        if method == "session/set_config_option":
            if isinstance(answer, dict) and isinstance(answer.get("configOptions"), list):
                self.take({"configOptions": answer["configOptions"]})
            elif (option := self._option(params["configId"])) is not None:
                option["currentValue"] = params["value"]
        elif method == "session/set_mode" and self.modes is not None:
            self.modes["currentModeId"] = params["modeId"]
        elif method == "session/set_model" and self.models is not None:
            self.models["currentModelId"] = params["modelId"]
