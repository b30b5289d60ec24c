"""2048 Studio. ``python main.py`` opens the GUI; ``python main.py --help`` lists the headless commands."""

import sys

from studio.cli import main

if __name__ == "__main__":
    sys.exit(main())
