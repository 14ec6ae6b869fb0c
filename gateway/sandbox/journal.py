"""The host's answers to one execution, kept to replay a paused execution to the call it paused at:
a sub-face, since it is what the core carries between approval rounds, apart from the sandbox itself."""

from gateway.sandbox._journal import HostAnswer, HostJournal, PausedCall, arguments_digest

__all__ = ("HostAnswer", "HostJournal", "PausedCall", "arguments_digest")
