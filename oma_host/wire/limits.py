"""The size limit both doors put on one message.

It imports nothing, so startup code reads it without loading the wire's
modules.
"""

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
