"""The workstation's screens (each module: one screen; its .tcss beside it)."""

from .discarded import DiscardedScreen
from .help import HelpScreen
from .knowledge import KnowledgeScreen
from .queue import QueueScreen
from .stats import StatsScreen
from .tombstones import TombstonesScreen

__all__ = ["DiscardedScreen", "HelpScreen", "KnowledgeScreen", "QueueScreen", "StatsScreen", "TombstonesScreen"]
