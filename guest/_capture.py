"""Byte-capped text streams for the snippet's stdout and stderr."""

import io

__all__ = ["CappedStream"]


class CappedStream(io.TextIOBase):
    """Keeps the first `limit` UTF-8 bytes written, counts the rest, and never raises on overflow."""

    def __init__(self, limit: int, name: str) -> None:
        super().__init__()
        self._limit = limit
        self._name = name
        self._parts: list[str] = []
        self._kept = 0
        self.dropped = 0

    @property
    def name(self) -> str:  # type: ignore[override]
        return self._name

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # snippets pass anything
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.dropped:
            self.dropped += len(text.encode("utf-8", "replace"))
            return len(text)
        data = text.encode("utf-8", "replace")
        room = self._limit - self._kept
        if len(data) <= room:
            self._parts.append(text)
            self._kept += len(data)
        else:
            # Cut on a character boundary so the kept part stays valid UTF-8.
            self._parts.append(data[:room].decode("utf-8", "ignore"))
            self._kept = self._limit
            self.dropped = len(data) - room
        return len(text)

    def getvalue(self) -> str:
        return "".join(self._parts)
