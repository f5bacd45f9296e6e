"""The one place the providers reach into httpx's private attributes: a lighter response.

Headers built on first use and a plain body read in one call make a whole
answer several times cheaper to take in; that means setting what httpx's
constructor and ``aread`` set, private attributes included.
``tests/providers/test_httpx_internals.py`` fails when an httpx release changes
them.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx


class WholeBody(httpx.AsyncByteStream):
    """A response body that can also be read in one call."""

    # No content coding: the bytes read are the body itself.
    plain: bool = False

    async def read_all(self) -> bytes:
        """The rest of the body, in one call."""
        raise NotImplementedError


class LazyResponse(httpx.Response):
    """httpx's response on a :class:`WholeBody`, its headers made from
    ``raw_headers`` when first read, its :meth:`aread` taking a plain body
    in one call."""

    def __init__(
        self,
        status_code: int,
        raw_headers: Sequence[tuple[bytes, bytes]],
        stream: WholeBody,
        request: httpx.Request,
        extensions: dict[str, bytes],
    ) -> None:
        # What httpx.Response(status, headers=..., stream=..., request=...,
        # extensions=...) sets, but the headers.
        self.status_code = status_code
        self._raw_headers: Sequence[tuple[bytes, bytes]] | None = raw_headers
        self._headers: httpx.Headers | None = None
        self._request: httpx.Request | None = request
        self.next_request: httpx.Request | None = None
        self.extensions = dict(extensions)
        self.history: list[httpx.Response] = []
        self.is_closed = False
        self.is_stream_consumed = False
        self.default_encoding = "utf-8"
        self.stream = stream
        self._num_bytes_downloaded = 0

    @property
    def headers(self) -> httpx.Headers:
        headers = self._headers
        if headers is None:
            headers = self._headers = httpx.Headers(self._raw_headers)
            self._raw_headers = None
        return headers

    @headers.setter
    def headers(self, headers: httpx.Headers) -> None:
        self._headers = headers

    async def aread(self) -> bytes:
        stream = self.stream
        if (
            not isinstance(stream, WholeBody)
            or not stream.plain  # httpx decodes it
            or hasattr(self, "_content")  # read already
            or self.is_stream_consumed  # httpx raises the error for these
            or self.is_closed
        ):
            return await super().aread()
        # What httpx's aread does for a body without content coding.
        self.is_stream_consumed = True
        content = await stream.read_all()
        self._num_bytes_downloaded = len(content)
        await self.aclose()
        self._content = content
        return content

    async def aclose(self) -> None:
        """httpx's, without its context manager (which sets the request on
        the error the stream's closing raises, as this does)."""
        stream = self.stream
        if self.is_closed or not isinstance(stream, WholeBody):
            return await super().aclose()
        self.is_closed = True
        try:
            await stream.aclose()
        except httpx.RequestError as error:
            if self._request is not None:
                error.request = self._request
            raise
