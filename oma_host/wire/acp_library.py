"""The ACP library (``acp``), loaded once without building what the host never uses.

``acp.schema`` declares about 280 pydantic models and asks pydantic to read
every field's docstring back from the source (``use_attribute_docstrings``):
building them all took about half a second of CPU in each process that serves
or wraps an ACP agent, most of what the ACP door costs to start. Loaded here,
the library's models are declared with ``defer_build`` (a model's validator is
built the first time it is used, and most never are) and without the
docstrings (they only describe fields in JSON schemas, which the host never
asks the library for). What a model accepts and produces is the same.

The ACP door's loader, the ACP bridge's package and the door's error paths
load the library through this module, before any other module imports it.
Should pydantic's internals change, the library is imported as it is
(``tests/acp_server/test_start.py`` then fails).
"""

from __future__ import annotations

from typing import Any


def _the_librarys(namespace: dict[str, Any]) -> bool:
    """A model of the library's, or a ``RootModel[...]`` pydantic makes for
    one (named after pydantic's module, and without a ``__qualname__``)."""
    module = str(namespace.get("__module__", ""))
    if module == "pydantic.root_model":
        return "__qualname__" not in namespace
    return module.startswith("acp.")


def _load() -> None:
    try:
        from pydantic._internal._config import ConfigWrapper

        declared = ConfigWrapper.__dict__["for_model"]
        original = declared.__func__
    except (ImportError, KeyError, AttributeError):
        return  # imported below as it is

    def for_acp_models(cls: Any, bases: Any, namespace: Any, *rest: Any, **kwargs: Any) -> Any:
        config = original(cls, bases, namespace, *rest, **kwargs)
        if _the_librarys(namespace):
            config.config_dict["defer_build"] = True
            config.config_dict["use_attribute_docstrings"] = False
        return config

    ConfigWrapper.for_model = classmethod(for_acp_models)  # type: ignore[method-assign,assignment]
    try:
        import acp  # noqa: F401
    finally:
        ConfigWrapper.for_model = declared  # type: ignore[method-assign]


_load()
import acp  # noqa: E402 (loaded by _load, if pydantic is as expected)

__all__ = ["acp"]
