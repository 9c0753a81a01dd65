"""evalcore.items: item quality tools that need more than the stats (a corpus n-gram index)."""
