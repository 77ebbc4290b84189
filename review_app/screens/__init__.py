"""The workstation's screens (each module: one screen; its .tcss beside it)."""

from .queue import QueueScreen

__all__ = ["QueueScreen"]
