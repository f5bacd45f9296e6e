"""The JSON-RPC door's default limits, which the command line reads without the door."""

# ndjson: after the end of input, how long the requests in flight may finish.
DEFAULT_DRAIN_TIMEOUT_S = 600.0
# TCP: connections that showed the token, served at once.
DEFAULT_MAX_CONNECTIONS = 64
# TCP: how long a connection has to send its authenticated initialize.
DEFAULT_HANDSHAKE_TIMEOUT_S = 30.0
