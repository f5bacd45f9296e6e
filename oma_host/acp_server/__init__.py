"""The ACP door: ``oma-host acp`` serves the host's agents to ACP editors (docs/acp.md).

Agent Client Protocol version 1, newline-delimited JSON on stdio. It sits
beside the JSON-RPC door on the same core, store and agents, and neither door
imports the other, so neither pays for the other's start. :mod:`.serve` is
the entry point: the agents read once (:mod:`.agents`), ``initialize``
answered from that reading (:mod:`.handshake`), then the rest served
(:mod:`.lazy_door`).
"""
