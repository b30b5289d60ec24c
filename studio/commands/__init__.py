"""Headless sub-commands of ``python main.py`` (one module each; see ``studio.cli``)."""

import logging

# The commands speak to the terminal themselves (one line per error); their log records (a failed run's
# traceback) go to the handlers the application sets up (DATA/logs/), never to stderr through Python's
# last-resort handler when none is set up.
logging.getLogger(__name__).addHandler(logging.NullHandler())
