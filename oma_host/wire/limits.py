"""The doors' default limits, in a module that imports nothing.

The command line declares its options from them without importing either door.
"""

# A message larger than this is dropped (a request answered -32600), on both doors.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# The JSON-RPC door on ndjson: after the end of input, how long the requests
# in flight may finish.
DEFAULT_DRAIN_TIMEOUT_S = 600.0
# The JSON-RPC door on TCP: connections that showed the token, served at once.
DEFAULT_MAX_CONNECTIONS = 64
# The JSON-RPC door on TCP: how long a connection has to send its authenticated initialize.
DEFAULT_HANDSHAKE_TIMEOUT_S = 30.0
