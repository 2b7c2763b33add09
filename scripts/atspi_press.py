#!/usr/bin/python3
"""Uses the running desktop app as a screen reader does, one step per call (the live class's
browser test drives the teacher's desktop console with it; scripts/atspi-test.sh sets up the
buses):

    /usr/bin/python3 scripts/atspi_press.py --pid PID --press "Ask the room"
    /usr/bin/python3 scripts/atspi_press.py --pid PID --read "3 answered"

--press waits (30 s at most) for an enabled control whose accessible name is exactly NAME and
invokes its action; --read waits for a node whose name starts with TEXT and prints that name.
Exits non-zero, saying what it saw, when neither comes.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from atspi_check import Atspi, CheckFailed, GLib, act, find_app, wait_tree  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pid", type=int, required=True)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--press", help="an enabled control's exact name")
    what.add_argument("--read", help="the start of a node's name")
    ap.add_argument("--timeout", type=float, default=30)
    a = ap.parse_args()
    Atspi.init()
    Atspi.set_timeout(5000, 5000)
    try:
        app = find_app(a.pid, 60)
        if a.press:
            nodes = wait_tree(
                app,
                lambda ns: any(n.name == a.press and n.enabled and n.actions for n in ns),
                f"an enabled control named {a.press!r}",
                a.timeout,
            )
            node = next(n for n in nodes if n.name == a.press and n.enabled and n.actions)
            act(node, repr(a.press))
        else:
            nodes = wait_tree(
                app,
                lambda ns: any(n.name.startswith(a.read) for n in ns),
                f"a node named {a.read!r}…",
                a.timeout,
            )
            print(next(n.name for n in nodes if n.name.startswith(a.read)))
    except CheckFailed as e:
        print(f"atspi-press: {e}", file=sys.stderr)
        return 1
    except GLib.Error as e:
        print(f"atspi-press: an AT-SPI call failed: {e.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
