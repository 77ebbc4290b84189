"""The names `policy_cli` imports as `from .cli import ...` (it was written beside the one-module
command line, review_app/cli.py, and moved into this package unchanged): the shared helpers of
`common` under their old names. New code imports `common` directly."""

from .common import BadInput, echo, existing_db
from .common import json_text as _json
from .common import os_user as _os_user
from .common import run_engine as _run

__all__ = ["BadInput", "_json", "_os_user", "_run", "echo", "existing_db"]
