"""A text stream is redacted as a whole, however it is cut into deltas
(:class:`oma_host.core.recorder.StreamRedaction`, through the RunRecorder)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from oma_host.core.messages import ToolUseBlock
from oma_host.core.recorder import RunRecorder, StreamRedaction
from oma_host.core.redact import Redactor
from oma_host.core.results import StreamEvent
from tests.builders import tool_use

SECRETS = ("sk-abcdefghij", "abcdXYZ", "defghij-tail")


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(cut, len(text)) for cut in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


@given(
    pieces=st.lists(
        st.sampled_from([*SECRETS, "sk-", "abc", "de", "x", " ", "-tail", "XYZ", "hello "]),
        max_size=12,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=120), max_size=10),
)
def test_the_joined_stream_is_the_whole_text_redacted(pieces: list[str], cuts: list[int]) -> None:
    redactor = Redactor(SECRETS, patterns=False)
    text = "".join(pieces)
    stream = StreamRedaction(redactor)
    out = "".join(stream.feed(delta) for delta in split(text, cuts)) + stream.finish()
    assert out == redactor.redact(text)
    assert not any(secret in out for secret in SECRETS)


def test_only_a_possible_start_of_a_secret_is_held_back() -> None:
    stream = StreamRedaction(Redactor(["sk-abcdefghij"], patterns=False))
    assert stream.feed("plain words ") == "plain words "  # nothing could begin the key
    assert stream.feed("then sk-abc") == "then "
    assert stream.feed("defghij and more") == "[redacted] and more"
    assert stream.feed(" s") == " "
    assert stream.finish() == "s"


def test_the_recorder_streams_text_and_reasoning_each_as_one_stream() -> None:
    events: list[StreamEvent] = []
    recorder = RunRecorder("run_1", events.append, Redactor(["secret-value"], patterns=False))
    for piece in ("the secr", "et-va", "lue!"):
        recorder.text(piece)
        recorder.reasoning(piece)
    call: ToolUseBlock = tool_use("t", "n")
    recorder.event({"type": "tool_use", "data": call})
    result = recorder.result()
    joined = {
        kind: "".join(e["data"] for e in events if e["type"] == kind)
        for kind in ("text", "reasoning")
    }
    assert joined == {"text": "the [redacted]!", "reasoning": "the [redacted]!"}
    assert result["output"] == "the secret-value!"  # the agent redacts the result whole
    assert {"type": "tool_use", "data": call} in events


class _NoShortcut(Redactor):
    """A redactor that never says a text is untouched: StreamRedaction then
    always takes its general path."""

    def keeps(self, text: str) -> bool:
        return False


@given(
    pieces=st.lists(
        st.sampled_from([*SECRETS, "sk-", "abc", "de", "x", " ", "-tail", "XYZ", "hello ", "j"]),
        max_size=12,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=120), max_size=10),
)
def test_each_delta_is_given_out_as_the_general_path_gives_it(
    pieces: list[str], cuts: list[int]
) -> None:
    """The shortcut for a delta that holds nothing of a secret changes no
    delta sent, not only the joined text."""
    text = "".join(pieces)
    fast = StreamRedaction(Redactor(SECRETS, patterns=False))
    general = StreamRedaction(_NoShortcut(SECRETS, patterns=False))
    deltas = split(text, cuts)
    assert [fast.feed(d) for d in deltas] == [general.feed(d) for d in deltas]
    assert fast.finish() == general.finish()
