"""The one-pass guard in ``oma_host.core.messages`` against the copy-then-check
guard it replaced (tests/core/guard_oracle.py, kept verbatim): on many valid
and invalid inputs both return equal copies built from the same types in the
same key order, or both raise InvalidMessageError with the same text and path.

The inputs are near misses on purpose: every field of every block type is
present and right, absent, or some other value (plain or not: tuples, sets,
functions, bytes, subclasses of dict, list and str, a str enum, dicts with
non-string keys), in any key order, so several faults of different kinds meet
in one input and the order in which they are reported is compared too."""

from __future__ import annotations

import base64
import copy
import random
from collections.abc import Callable
from enum import Enum
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oma_host.core import guard
from oma_host.core.errors import InvalidMessageError
from tests.core import guard_oracle


class _Role(str, Enum):  # noqa: UP042 (the classic str enum, whose str() is "_Role.USER")
    USER = "user"


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _List(list):  # type: ignore[type-arg]
    pass


class _Str(str):
    def __str__(self) -> str:
        return "not the characters"


class _Opaque:
    pass


def _plain_or_not(value: Any, wrap: str) -> Any:
    if wrap == "tuple" and isinstance(value, list):
        return tuple(value)
    if wrap == "subclass" and isinstance(value, list):
        return _List(value)
    if wrap == "subclass" and isinstance(value, dict):
        return _Dict(value)
    return value


def rarely(draw: st.DrawFn, one_in: int) -> bool:
    """True once in ``one_in`` draws. (The middle value, since hypothesis
    favours the ends of a range.)"""
    return bool(draw(st.integers(0, one_in - 1)) == one_in // 2)


@st.composite
def mostly(draw: st.DrawFn, usual: st.SearchStrategy[Any], *rare: st.SearchStrategy[Any]) -> Any:
    """A draw from ``usual``, or once in ten from one of ``rare``."""
    if rarely(draw, 10):
        return draw(st.one_of(*rare))
    return draw(usual)


WRAPS = mostly(st.just("plain"), st.sampled_from(["tuple", "subclass"]))

odd_scalars = st.sampled_from(
    [print, len, {1, 2}, frozenset(), b"AAAA", 1 + 2j, _Opaque(), _Str("text"), _Role.USER]
)
json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6)
)
odd_keys = st.sampled_from([1, None, 2.5, b"k", ("a",), _Str("k"), _Role.USER])


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = mostly(st.text(max_size=4), odd_keys)
    return st.builds(
        _plain_or_not,
        st.lists(children, max_size=3) | st.dictionaries(keys, children, max_size=3),
        WRAPS,
    )


plain_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)
odd_values = st.recursive(json_scalars | odd_scalars, _containers, max_leaves=6)
# Mostly plain JSON, so that most inputs get past the copy to the shape checks.
values = mostly(plain_values, odd_values)

b64_data = mostly(
    st.binary(min_size=1, max_size=9).map(lambda raw: base64.b64encode(raw).decode()),
    st.binary(max_size=9).map(lambda raw: base64.b64encode(raw).decode().rstrip("=")),
    st.sampled_from(["", "=", "==", "===", "A=A=", "AA=A", "aGVs\nbG8=", "aGVsbG8é", "a b", "-_"]),
)


@st.composite
def dicts(
    draw: st.DrawFn, fields: dict[str, st.SearchStrategy[Any]], odd_extra: bool = True
) -> Any:
    """A dict holding each field, absent or as drawn, maybe extra keys, in any
    key order; sometimes not a plain dict at all."""
    pairs: list[tuple[Any, Any]] = []
    for key, strategy in fields.items():
        if rarely(draw, 8):
            value = draw(values)
        elif not rarely(draw, 10):
            value = draw(strategy)
        else:
            continue  # the field is absent
        if isinstance(value, str) and rarely(draw, 20):
            value = _Str(value)  # equal to the plain string, but not plain
        pairs.append((_Str(key) if rarely(draw, 40) else key, value))
    if rarely(draw, 10):
        odd_key = odd_extra and rarely(draw, 4)
        pairs.append((draw(odd_keys if odd_key else st.text(max_size=5)), draw(values)))
    pairs = draw(st.permutations(pairs))
    built = dict(pairs)
    if rarely(draw, 30):
        return _Dict(built)
    return built


def sources(url_allowed: bool) -> st.SearchStrategy[Any]:
    kinds = ["base64", "url"] if url_allowed else ["base64"]
    return st.one_of(
        dicts(
            {
                "type": st.sampled_from([*kinds, "file", "URL"]),
                "media_type": st.text(max_size=4),
                "data": b64_data,
            }
        ),
        dicts(
            {
                "type": st.sampled_from([*kinds, "base64"]),
                "media_type": st.text(max_size=4),
                "url": st.text(max_size=4),
            }
        ),
    )


tool_result_parts = st.one_of(
    dicts({"type": st.just("text"), "text": st.text(max_size=4)}),
    dicts({"type": st.just("image"), "source": sources(url_allowed=True)}),
    dicts(
        {
            "type": st.just("file"),
            "filename": st.text(max_size=4),
            "source": sources(url_allowed=True),
        }
    ),
    dicts({"type": st.sampled_from(["audio", "tool_use", ""])}),
    plain_values,
)


def _sequence(items: st.SearchStrategy[Any], max_size: int) -> st.SearchStrategy[Any]:
    return st.builds(_plain_or_not, st.lists(items, max_size=max_size), WRAPS)


blocks = st.one_of(
    dicts({"type": st.just("text"), "text": st.text(max_size=6)}, odd_extra=False),
    dicts({"type": st.just("image"), "source": sources(url_allowed=False)}),
    dicts(
        {
            "type": st.just("tool_use"),
            "id": st.text(max_size=3),
            "name": st.text(max_size=3),
            "input": st.dictionaries(st.text(max_size=3), values, max_size=2),
        }
    ),
    dicts(
        {
            "type": st.just("tool_result"),
            "tool_use_id": st.text(max_size=3),
            "content": st.text(max_size=4) | _sequence(tool_result_parts, 3),
            "is_error": st.booleans(),
        }
    ),
    dicts(
        {
            "type": st.just("reasoning"),
            "text": st.text(max_size=4),
            "signature": st.text(max_size=3),
            "redactedData": st.text(max_size=3),
        }
    ),
    dicts({"type": st.sampled_from(["document", "TEXT", "", "file"]), "title": values}),
)
blocks = mostly(blocks, values)

roles = mostly(st.sampled_from(["user", "assistant"]), st.sampled_from(["system", "", _Role.USER]))
message_list = mostly(
    dicts({"role": roles, "content": _sequence(blocks, 3)}),
    dicts({"role": roles, "content": st.text(max_size=3) | values}),
    values,
)


def outcome(call: Callable[[], Any]) -> tuple[str, Any, Any]:
    """What a guard call did: its value and the types in it, or its error."""
    try:
        result = call()
    except InvalidMessageError as error:
        return ("error", str(error), error.path)
    return ("value", result, skeleton(result))


def skeleton(value: Any) -> Any:
    """The exact types and key order of ``value``, which equality ignores."""
    if isinstance(value, dict):
        return (type(value), [(type(key), key, skeleton(item)) for key, item in value.items()])
    if isinstance(value, list | tuple):
        return (type(value), [skeleton(item) for item in value])
    return type(value)


def assert_same(new: Callable[[], Any], old: Callable[[], Any]) -> None:
    expected = outcome(old)
    assert outcome(new) == expected


GUARDS = [
    ("run input", guard.guard_run_input, guard_oracle.guard_run_input, "input"),
    ("history", guard.guard_messages, guard_oracle.guard_messages, "config.history"),
    ("prompt", guard.guard_prompt_input, guard_oracle.guard_prompt_input, "prompt"),
]

EXAMPLES = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@EXAMPLES
@given(_sequence(message_list, 4))
def test_message_lists_are_guarded_as_before(value: Any) -> None:
    for _, new, old, path in GUARDS[:2]:
        assert_same(lambda: new(value, path), lambda: old(value, path))  # noqa: B023
        assert_same(
            lambda: new(value, path, owned=True),  # noqa: B023
            lambda: old(value, path, owned=True),  # noqa: B023
        )


@EXAMPLES
@given(_sequence(blocks, 4))
def test_prompt_blocks_are_guarded_as_before(value: Any) -> None:
    new, old = guard.guard_prompt_input, guard_oracle.guard_prompt_input
    for path in ("input", "prompt"):
        assert_same(lambda: new(value, path), lambda: old(value, path))  # noqa: B023
        assert_same(
            lambda: new(value, path, owned=True),  # noqa: B023
            lambda: old(value, path, owned=True),  # noqa: B023
        )


@pytest.mark.parametrize(("name", "new", "old", "path"), GUARDS, ids=[g[0] for g in GUARDS])
@pytest.mark.parametrize(
    "value",
    [
        "hello",
        _Str("hi"),
        [],
        (),
        None,
        {"role": "user", "content": []},
        [{"role": "user", "content": "hello"}],
        [{"role": "user", "content": [{"type": "text", "text": "a"}]}, {"role": 1, "x": print}],
        [{"role": "bot", "content": [{"type": "tool_use", "id": 1, "input": {3: 4}}]}],
        [{"content": [{"type": "text", "text": 1}], "role": print}],
        [{"type": "text", "text": "a"}, {"type": "image", "source": {"type": "base64"}}],
    ],
    ids=lambda value: repr(value)[:40],
)
def test_edge_inputs_are_guarded_as_before(
    name: str, new: Callable[..., Any], old: Callable[..., Any], path: str, value: Any
) -> None:
    assert_same(lambda: new(value, path), lambda: old(value, path))
    assert_same(lambda: new(value, path, owned=True), lambda: old(value, path, owned=True))


def test_deep_nesting_after_a_shape_fault_reports_the_nesting_as_before() -> None:
    # The old guard copied everything before checking anything, so a value too
    # deep to copy won over a wrong role earlier in the list.
    deep: Any = "leaf"
    for _ in range(100_000):
        deep = [deep]
    value = [
        {"role": "system", "content": []},
        {"role": "user", "content": [{"type": "custom", "x": deep}]},
    ]
    assert_same(lambda: guard.guard_run_input(value), lambda: guard_oracle.guard_run_input(value))


# --------------------------------------------------------------------------
# table: every single fault at every place of a conversation that uses every
# block and part type, and a seeded sample of pairs of faults

SITE_BASE: list[Any] = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "QQ=="},
            },
            {"type": "tool_result", "tool_use_id": "t1", "content": "plain"},
            {
                "type": "tool_result",
                "tool_use_id": "t2",
                "is_error": False,
                "content": [
                    {"type": "text", "text": "a"},
                    {"type": "image", "source": {"type": "url", "media_type": "i/p", "url": "u"}},
                    {
                        "type": "file",
                        "filename": "f.pdf",
                        "source": {"type": "base64", "media_type": "a/p", "data": "QUJD"},
                    },
                ],
            },
            {"type": "tool_result", "tool_use_id": "t3", "is_error": True, "content": "boom"},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "reasoning", "text": "r", "signature": "s", "redactedData": "d"},
            {"type": "tool_use", "id": "i", "name": "n", "input": {"q": [1, {"k": None}]}},
            {"type": "custom", "payload": {"x": [True]}},
        ],
    },
    {"role": "user", "content": [{"type": "text", "text": "again"}]},
]

REPLACEMENTS: list[Any] = [
    None, 0, 1, True, False, 2.5, "", "x", "user", "system", "text", "base64", "url",
    "a b", "=", [], {}, ["x"], {"a": 1}, (1,), print, {1}, b"QQ==", _Role.USER, _Opaque(),
]  # fmt: skip

Path = tuple[str | int, ...]
Fault = tuple[str, Path, Any]


def _places(value: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    """Every value below ``value`` with its path, parents before children."""
    found: list[tuple[Path, Any]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        found.append(((*path, key), item))
        if isinstance(item, dict | list):
            found.extend(_places(item, (*path, key)))
    return found


def single_faults(base: Any) -> list[Fault]:
    faults: list[Fault] = [("wrap", (), kind) for kind in ("tuple", "subclass")]
    for path, item in _places(base):
        faults.extend(("set", path, replacement) for replacement in REPLACEMENTS)
        if isinstance(item, str):
            faults.append(("set", path, _Str(item)))
        if isinstance(path[-1], str):
            faults.append(("delete", path, None))
            faults.append(("rekey", path, None))
        if isinstance(item, dict):
            faults.append(("extra", path, ("extra", print)))
            faults.append(("extra", path, (3, "x")))
            faults.append(("extra", path, ("cache_control", {"type": "ephemeral"})))
        if isinstance(item, dict | list):
            faults.extend(("wrap", path, kind) for kind in ("tuple", "subclass"))
    return faults


def apply_fault(root: Any, fault: Fault) -> Any:
    """``root`` with ``fault`` applied (in place where it can be); raises
    LookupError when an earlier fault removed the place."""
    action, path, argument = fault
    parent = root
    for key in path[:-1]:
        parent = parent[key]
    target = parent[path[-1]] if path else root
    if action == "set":
        parent[path[-1]] = argument
    elif action == "delete":
        del parent[path[-1]]
    elif action == "rekey":
        pairs = [(_Str(key) if key == path[-1] else key, item) for key, item in parent.items()]
        parent.clear()
        parent.update(pairs)
    elif action == "extra":
        if not isinstance(target, dict):
            raise LookupError(path)
        target[argument[0]] = argument[1]
    else:  # wrap
        if not isinstance(target, dict | list):
            raise LookupError(path)
        wrapped = tuple(target) if argument == "tuple" else _plain_or_not(target, "subclass")
        if not path:
            return wrapped
        parent[path[-1]] = wrapped
    return root


def faulty(base: Any, faults: list[Fault]) -> Any:
    root = copy.deepcopy(base)
    for fault in faults:
        root = apply_fault(root, fault)
    return root


def assert_all_guards_agree(value: Any, blocks: Any) -> None:
    for _, new, old, path in GUARDS[:2]:
        assert_same(lambda: new(value, path), lambda: old(value, path))  # noqa: B023
        assert_same(
            lambda: new(value, path, owned=True),  # noqa: B023
            lambda: old(value, path, owned=True),  # noqa: B023
        )
    new_prompt, old_prompt = guard.guard_prompt_input, guard_oracle.guard_prompt_input
    assert_same(lambda: new_prompt(blocks), lambda: old_prompt(blocks))
    assert_same(lambda: new_prompt(blocks, owned=True), lambda: old_prompt(blocks, owned=True))


def _prompt_blocks(value: Any) -> Any:
    """The first message's content, if the faults left one, as a prompt."""
    try:
        return value[0]["content"]
    except (LookupError, TypeError):
        return value


SINGLE_FAULTS = single_faults(SITE_BASE)


def test_the_fault_table_covers_every_place() -> None:
    assert len(SINGLE_FAULTS) > 2000
    assert_all_guards_agree(SITE_BASE, SITE_BASE[0]["content"])
    assert guard.guard_run_input(SITE_BASE) == SITE_BASE


def test_every_single_fault_is_reported_as_before() -> None:
    for fault in SINGLE_FAULTS:
        value = faulty(SITE_BASE, [fault])
        assert_all_guards_agree(value, _prompt_blocks(value))


def _apply_pair(pair: list[Fault]) -> None:
    try:
        value = faulty(SITE_BASE, pair)
    except (LookupError, TypeError, AttributeError):
        return  # the first fault removed or replaced the second one's place
    assert_all_guards_agree(value, _prompt_blocks(value))


SIBLING_VALUES: list[Any] = [None, 1, "x", print]


def sibling_fault_pairs(base: Any) -> list[list[Fault]]:
    """Two faults in the same container: which of them is reported first is
    the order of the checks."""
    by_parent: dict[Path, list[Fault]] = {}
    for path, _ in _places(base):
        faults: list[Fault] = [("set", path, value) for value in SIBLING_VALUES]
        if isinstance(path[-1], str):
            faults.append(("delete", path, None))
        by_parent.setdefault(path[:-1], []).extend(faults)
    return [
        [first, second]
        for faults in by_parent.values()
        for first in faults
        for second in faults
        if first[1] != second[1]
    ]


def test_pairs_of_faults_in_one_container_are_reported_as_before() -> None:
    pairs = sibling_fault_pairs(SITE_BASE)
    assert len(pairs) > 1000
    for pair in pairs:
        _apply_pair(pair)


def test_pairs_of_faults_anywhere_are_reported_as_before() -> None:
    chooser = random.Random(13)
    for _ in range(3000):
        _apply_pair(chooser.sample(SINGLE_FAULTS, 2))
