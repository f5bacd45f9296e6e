"""The certificates the providers' HTTP client trusts, as one SSL context
shared by every connection (both transports).

- ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, when set to an existing file or
  directory, replace every default, as they did when httpx chose the
  certificates itself.
- Otherwise the operating system's store. On macOS and Windows that is the
  platform's verifier, through ``truststore``. On Linux and the BSDs it is
  OpenSSL's default store (the distribution's CA bundle), loaded once here:
  truststore would reload it on every new connection, on the event loop, tens
  of milliseconds each, which hundreds of concurrent connections cannot
  afford. A system without a CA bundle (a minimal container) gets certifi's
  Mozilla bundle instead, which is what httpx trusted before.
"""

from __future__ import annotations

import os
import ssl
import sys


def trust_context() -> ssl.SSLContext:
    """A client context verifying certificates and host names against the
    trusted certificates described in the module docstring."""
    cafile = os.environ.get("SSL_CERT_FILE") or ""
    capath = os.environ.get("SSL_CERT_DIR") or ""
    chosen_file = cafile if os.path.isfile(cafile) else None
    chosen_dir = capath if os.path.isdir(capath) else None
    if chosen_file or chosen_dir:
        return ssl.create_default_context(cafile=chosen_file, capath=chosen_dir)
    if sys.platform in ("darwin", "win32"):
        import truststore

        return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context = ssl.create_default_context()
    if not context.cert_store_stats()["x509_ca"] and not _has_ca_dir():
        import certifi

        context.load_verify_locations(certifi.where())
    return context


def _has_ca_dir() -> bool:
    """Whether OpenSSL's default CA directory holds certificates (they are
    looked up there on demand, so loading the context does not count them)."""
    capath = ssl.get_default_verify_paths().capath
    return capath is not None and any(name.endswith(".0") for name in os.listdir(capath))
