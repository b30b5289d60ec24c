"""Headless sub-commands of ``python main.py`` (one module each; see ``studio.cli``)."""
