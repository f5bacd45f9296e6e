"""The LLM backend's tool tests drive a real host against the provider
simulator (the suite's ``sim``), with the same host fixture as the provider
tests."""

from tests.providers.conftest import host

__all__ = ["host"]
