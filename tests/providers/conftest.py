"""Fixtures for the provider tests: a real provider simulator on 127.0.0.1
(in this process, in a thread) and the real server (``host``, in this
process: tests/conftest.py marks these tests ``in_process``) with a known API
key in its environment, once per HTTP transport."""

from __future__ import annotations

from typing import Any

import pytest

from tests.providers.helpers import TRANSPORTS

ANTHROPIC_KEY = "sk-ant-api03-test-key-DO-NOT-LEAK-1234567890"
OPENAI_KEY = "sk-proj-test-key-DO-NOT-LEAK-0987654321"
AZURE_KEY = "azure-test-key-DO-NOT-LEAK-5678901234abcdef"


@pytest.fixture
def host_variables() -> dict[str, str]:
    """Every provider test's host knows these keys (none of them may leak)."""
    return {
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "OPENAI_API_KEY": OPENAI_KEY,
        "AZURE_OPENAI_API_KEY": AZURE_KEY,
    }


@pytest.fixture(params=TRANSPORTS)
def host_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A host on each HTTP transport in turn: every provider test runs on both."""
    return {"http": {"transport": request.param}}
