"""Whose view of a file a run's file tools see: the disk's, or the editor's
(an ACP client's ``fs/read_text_file``, where an unsaved buffer wins over the
disk, and its ``fs/write_text_file``, where the editor applies the new text).

A door whose client can read files sets a :data:`FileReader` with
:func:`reading_through` around the run. The tool still confines the path to
the agent's ``cwd`` itself, and asks the reader only for a path that resolves
beneath it, by its absolute name. A context variable carries the reader, as
:mod:`.activity` carries progress: the reader belongs to one door's session
and connection, not to the agent's config, so it travels beside the run to
the tool without a parameter on every layer between (the agent, its backend,
built once and kept across runs, the loop and the tool registry), and a run
started by any other door reads the disk. A :data:`FileWriter`, set with
:func:`writing_through`, likewise carries ``file_write`` and ``file_edit``
to the editor instead of the disk.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar

# Reads the text of a file given its absolute path; raises when it cannot.
FileReader = Callable[[str], Awaitable[str]]

_reader: ContextVar[FileReader | None] = ContextVar("oma_file_reader", default=None)


@contextlib.contextmanager
def reading_through(reader: FileReader) -> Iterator[None]:
    """Have the runs started inside this block read files through ``reader``."""
    token = _reader.set(reader)
    try:
        yield
    finally:
        _reader.reset(token)


def current_file_reader() -> FileReader | None:
    """The reader of the current run, or None: read the disk."""
    return _reader.get()


# Writes the whole new text of a file given its absolute path; raises when it cannot.
FileWriter = Callable[[str, str], Awaitable[None]]

_writer: ContextVar[FileWriter | None] = ContextVar("oma_file_writer", default=None)


@contextlib.contextmanager
def writing_through(writer: FileWriter) -> Iterator[None]:
    """Have the runs started inside this block write files through ``writer``."""
    token = _writer.set(writer)
    try:
        yield
    finally:
        _writer.reset(token)


def current_file_writer() -> FileWriter | None:
    """The writer of the current run, or None: write the disk (or apply the
    edit through the JSON-RPC client's ``workspace/applyEdit``)."""
    return _writer.get()
