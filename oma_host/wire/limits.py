"""The size limit both doors put on one message, in a module that imports
nothing, so the command line and the ACP door's early answer
(:mod:`oma_host.acp_server.early`) read it without the wire's modules."""

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
