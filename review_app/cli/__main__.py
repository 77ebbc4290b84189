"""`python -m review_app.cli`: how `memdesk serve` starts each browser session's workstation."""

from review_app.cli import main

if __name__ == "__main__":  # imported (a module walk, a test): nothing runs
    main()
