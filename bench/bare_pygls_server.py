"""The startup baseline: the smallest pygls language server there is.

It registers nothing, so it answers only what pygls's ``LanguageServer``
answers on its own (``initialize``, ``shutdown``, ``exit``). Spawning it and
waiting for the ``initialize`` response measures the floor that any
pygls-based host pays: the interpreter, pygls, lsprotocol and a stdio loop.
"""

from __future__ import annotations

from pygls.lsp.server import LanguageServer


def main() -> None:
    """Serve on stdin/stdout until ``exit`` or end of input."""
    server = LanguageServer("bare", "0")
    server.start_io()


if __name__ == "__main__":
    main()
