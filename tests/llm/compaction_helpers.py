"""Shared by the compaction tests: the provider's own token count of a
request (what the simulator reports as usage and holds the window to), a
simulator that answers summary requests with numbered summaries, and ways
to read what a request held."""

from __future__ import annotations

import json
from typing import Any

from oma_host.core.provider_facts import facts_of
from oma_host.llm.context_window import SUMMARY_INSTRUCTION
from oma_host.testing.script import RecordedRequest, Reply
from oma_host.testing.simulator import Simulator, TokenCounter

SUMMARY_HEADING = "[Summary of the earlier conversation"
# Where each wire keeps the media a body carries (as base64 or a data URL).
_MEDIA_KEYS = ("data", "inlineData", "bytes")


def _media_free(value: Any) -> tuple[Any, int]:
    """``value`` with each image's bytes taken out, and how many there were."""
    if isinstance(value, dict):
        found = 0
        kept: dict[str, Any] = {}
        for key, item in value.items():
            if key in _MEDIA_KEYS or (isinstance(item, str) and item.startswith("data:")):
                found += 1
                continue
            kept[key], inner = _media_free(item)
            found += inner
        return kept, found
    if isinstance(value, list):
        items = [_media_free(item) for item in value]
        return [item for item, _ in items], sum(found for _, found in items)
    return value, 0


def provider_tokens(provider: str = "anthropic") -> TokenCounter:
    """The provider's count of a request: every character of its body but
    the model and the limits, at the provider's characters per token, and
    each image at its tokens per image (the JSON's own punctuation counts:
    a stricter count than the host's estimate, which the usage corrects)."""
    facts = facts_of(provider)

    def count(request: RecordedRequest) -> int:
        body = {
            key: value
            for key, value in request.body.items()
            if key not in ("model", "max_tokens", "stream", "inferenceConfig")
        }
        stripped, images = _media_free(body)
        return int(len(json.dumps(stripped)) / facts.chars_per_token) + images * facts.image_tokens

    return count


def is_summary_request(request: RecordedRequest) -> bool:
    return SUMMARY_INSTRUCTION in json.dumps(request.body)


def summaries(sim: Simulator) -> list[str]:
    """Have ``sim`` answer each summary request with ``SUMMARY <n>`` (and the
    number of summary requests so far), every other one as it would; the
    list of the summaries given, in order."""
    given: list[str] = []

    def respond(request: RecordedRequest) -> Reply | None:
        if not is_summary_request(request):
            return None
        given.append(f"SUMMARY {len(given) + 1}: the questions so far were answered")
        return Reply.text(given[-1])

    sim.responder = respond
    return given


def posts(sim: Simulator) -> list[RecordedRequest]:
    return [request for request in sim.requests if request.method == "POST"]


def turn_requests(sim: Simulator) -> list[RecordedRequest]:
    """The requests of the agent's turns (not its summaries)."""
    return [request for request in posts(sim) if not is_summary_request(request)]


def first_text(request: RecordedRequest) -> str:
    """The first text block of the first message an Anthropic request sent."""
    text: str = request.body["messages"][0]["content"][0]["text"]
    return text
