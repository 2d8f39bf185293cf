"""The catalog: listing facts, search, stats, sync of pi session directories."""
