"""The main window's tabs, one module each (Play, Replay, Games here; Train and Arena in their own)."""
