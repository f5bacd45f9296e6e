"""The certificates the providers' HTTP client trusts, as one SSL context for every connection.

``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` replace every default; otherwise the
system's store, through ``truststore`` on macOS and Windows. On Linux OpenSSL's
default store is loaded once here, since truststore would reload it on every
new connection on the event loop; without a CA bundle, certifi's.
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
