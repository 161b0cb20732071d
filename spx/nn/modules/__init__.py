"""The layer classes, one family per file; ``spx.nn`` re-exports them."""
