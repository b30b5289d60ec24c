"""2048 Studio's front ends: the PySide6 GUI, the command line, the pygame player.

Owns no game or learning logic: it calls ``engine`` and ``agents``. Qt is imported only by the GUI
modules, so the headless commands run without a display.
"""
