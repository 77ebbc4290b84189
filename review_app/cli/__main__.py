"""`python -m review_app.cli`: how `memdesk serve` starts each browser session's workstation."""

from review_app.cli import main

main()
