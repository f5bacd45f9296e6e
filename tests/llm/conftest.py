"""The LLM backend's tool tests drive a real host against the provider
simulator (the suite's ``sim``), with the same host as the provider tests:
their keys, once per HTTP transport."""

from tests.providers.conftest import host_options, host_variables

__all__ = ["host_options", "host_variables"]
