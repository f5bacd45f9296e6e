"""The LLM backend's tool tests drive a real host against the provider
simulator, with the same fixtures as the provider tests."""

from tests.providers.conftest import host, sim

__all__ = ["host", "sim"]
