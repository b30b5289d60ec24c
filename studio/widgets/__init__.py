"""Reusable Qt widgets of the studio (the board, the small histogram)."""
