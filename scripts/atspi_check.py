#!/usr/bin/python3
"""Reads the running desktop app the way a screen reader does: over AT-SPI (issue 40, item 5).

Run by scripts/atspi-test.sh, which starts Xvfb, a D-Bus session, the AT-SPI bus with
accessibility on, and `tplab --view design --challenge 5 --lang LANG`; then

    /usr/bin/python3 scripts/atspi_check.py --pid PID --lang en|tr

Interpreter: Debian's /usr/bin/python3 with python3-gi and gir1.2-atspi-2.0 (libatspi through
GObject introspection, the library pyatspi wraps). pyenv's or a venv's python cannot import them.

Challenge 5 ("Make GeLU read a partial sum") opens on Megatron's MLP split with hand-placed
collectives: fc1 by columns, fc2 by rows, equal to the reference. The check

  1. finds the app's accessible application (by process id) and, by their accessible names in
     LANG (read from lessons/i18n/LANG/views.ftl, not copied here), the four matrices, "Check my
     plan", "Step through my plan" and the verdict;
  2. invokes the AT-SPI action ("click") on fc1, which cycles its split columns -> rows;
  3. re-reads the tree: fc1's name now says rows, the verdict is the refusal, the broken rule
     (GeLU reads a partial sum of A) is shown, and "Step through my plan" is disabled;
  4. invokes "Check my plan" and reads the challenge's verdict (solved);
  5. sets fc1 back to columns through two actions, invokes "Step through my plan" and reads
     the walkthrough's banner on this plan, then "Back to the design lab";
  6. invokes an all-reduce's chip (challenge 5 places collectives by hand): one chip fewer, and
     "Step through my plan" disabled.

It prints what it found and exits non-zero with the reason on any failure.
"""

import argparse
import os
import re
import sys
import time
import warnings

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi, GLib  # noqa: E402

# libatspi 2.46 (Debian 12) marks Action.get_action_name deprecated but has no get_name yet.
warnings.filterwarnings("ignore", category=DeprecationWarning)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ISOLATION = dict.fromkeys(map(ord, "\u2068\u2069"))
# Interactive roles a screen reader announces as controls: each needs a name.
CONTROL_ROLES = {
    "push button",
    "toggle button",
    "check box",
    "radio button",
    "combo box",
    "menu item",
    "link",
    "slider",
    "spin button",
    "entry",
    "text",
    "page tab",
    "list item",
}


class CheckFailed(Exception):
    pass


def ftl(lang):
    """The `key = value` messages of lessons/i18n/LANG/views.ftl (continuation lines joined)."""
    path = os.path.join(ROOT, "lessons", "i18n", lang, "views.ftl")
    out, key = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^([a-z][a-z0-9-]*)\s*=\s?(.*)$", line)
            if m:
                key = m.group(1)
                out[key] = m.group(2)
            elif key and line.startswith((" ", "\t")) and line.strip():
                out[key] += ("\n" if out[key] else "") + line.strip()
            elif not line.strip() or line.startswith("#"):
                key = None
    return out


class Strings:
    def __init__(self, lang):
        self.msgs = ftl(lang)

    def __call__(self, key, **args):
        if key not in self.msgs:
            raise CheckFailed(f"lessons/i18n: no message '{key}'")
        text = self.msgs[key]
        for k, v in args.items():
            text = re.sub(r"\{\s*\$" + k + r"\s*\}", str(v), text)
        return text

    def start_pattern(self, key):
        """A regex for the message's start up to its second placeable (placeables match any
        text): the start of a message that may begin with a number, as Turkish ones do."""
        parts = re.split(r"\{[^}]*\}", self(key))
        return re.compile(".+?".join(re.escape(p) for p in parts[:2]))

    def prefix(self, key, **args):
        """The message up to its first placeable left unfilled."""
        return self(key, **args).split("{")[0].rstrip()


def clean(s):
    return (s or "").translate(ISOLATION)


class Node:
    __slots__ = ("acc", "depth", "role", "name", "description", "states", "actions")

    def __init__(self, acc, depth):
        self.acc = acc
        self.depth = depth
        self.role = acc.get_role_name()
        self.name = clean(acc.get_name())
        self.description = clean(acc.get_description())
        ss = acc.get_state_set()
        self.states = {s for s in (Atspi.StateType.SENSITIVE, Atspi.StateType.ENABLED,
                                   Atspi.StateType.FOCUSABLE, Atspi.StateType.SHOWING,
                                   Atspi.StateType.CHECKED) if ss.contains(s)}
        self.actions = []
        if "Action" in (acc.get_interfaces() or []):
            self.actions = [Atspi.Action.get_action_name(acc, i) for i in range(Atspi.Action.get_n_actions(acc))]

    @property
    def enabled(self):
        return Atspi.StateType.SENSITIVE in self.states and Atspi.StateType.ENABLED in self.states

    def __str__(self):
        st = "enabled" if self.enabled else "DISABLED"
        acts = f" actions={self.actions}" if self.actions else ""
        return f"[{self.role}] {self.name!r} ({st}){acts}"


def walk(app, limit=6000):
    """Every node under the application, depth first, read afresh over D-Bus."""
    Atspi.Accessible.clear_cache(app)
    nodes, stack = [], [(app, 0)]
    while stack:
        acc, depth = stack.pop()
        try:
            node = Node(acc, depth)
            n = acc.get_child_count()
            kids = [acc.get_child_at_index(i) for i in range(n)]
        except GLib.Error:
            continue  # a node that went away while it was read (the tree changes every frame)
        nodes.append(node)
        if len(nodes) > limit:
            raise CheckFailed(f"more than {limit} accessible nodes: a runaway tree?")
        for k in reversed(kids):
            if k is not None:
                stack.append((k, depth + 1))
    return nodes


def find_app(pid, timeout):
    desktop = Atspi.get_desktop(0)
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        Atspi.Accessible.clear_cache(desktop)
        seen = []
        for i in range(desktop.get_child_count()):
            app = desktop.get_child_at_index(i)
            if app is None:
                continue
            try:
                apid, name = app.get_process_id(), app.get_name()
            except GLib.Error:
                continue
            seen.append(f"{name!r} (pid {apid})")
            if apid == pid:
                # Not app.set_cache_mask(Atspi.Cache.NONE): with libatspi 2.46 the next read
                # of the app then blocks. walk() clears the cache before every read instead.
                return app
        time.sleep(0.5)
    raise CheckFailed(
        f"no accessible application with pid {pid} on the AT-SPI bus after {timeout} s "
        f"(applications registered: {', '.join(seen) or 'none'}): AccessKit never activated"
    )


def wait_tree(app, pred, what, timeout):
    """Re-reads the tree until pred(nodes) holds; returns the nodes."""
    deadline = time.time() + timeout
    nodes = []
    while True:
        nodes = walk(app)
        if pred(nodes):
            return nodes
        if time.time() >= deadline:
            names = sorted({n.name for n in nodes if n.name})
            raise CheckFailed(
                f"{what}: not found within {timeout:.0f} s. {len(nodes)} nodes; their names:\n  "
                + "\n  ".join(names[:200])
            )
        time.sleep(0.3)


def one(nodes, pred, what):
    hits = [n for n in nodes if pred(n)]
    if not hits:
        raise CheckFailed(f"no {what} in the accessible tree")
    if len(hits) > 1:
        raise CheckFailed(f"{len(hits)} nodes for {what}: " + "; ".join(map(str, hits)))
    return hits[0]


def act(node, what):
    """Invokes the node's click (or first) action, as a screen reader's 'activate' does."""
    if not node.actions:
        raise CheckFailed(f"{what} has no AT-SPI action: a screen reader cannot activate it ({node})")
    index = node.actions.index("click") if "click" in node.actions else 0
    ok = Atspi.Action.do_action(node.acc, index)
    if not ok:
        raise CheckFailed(f"the '{node.actions[index]}' action on {what} returned false")
    print(f"  activated {what} through its '{node.actions[index]}' action")


def check(pid, lang):
    s = Strings(lang)
    sep = " · "
    weights = {w: s(f"design-w-{w}") for w in ("qkv", "out", "fc1", "fc2")}
    splits = {k: s(f"design-split-{k}") for k in ("whole", "columns", "rows")}
    matrix = {w: {k: f"{weights[w]}{sep}{v}" for k, v in splits.items()} for w in weights}
    all_matrix_names = {name: (w, k) for w in matrix for k, name in matrix[w].items()}
    check_name = s("design-check")
    walk_name = s("design-walk")
    # The verdict of a plan equal to the reference: green with a tick once solved, and in a
    # challenge not yet solved the same words without the tick, pointing to the check.
    equals = (s.prefix("design-equal"), s.prefix("design-equal-goal-open"))
    refused = {s("design-refused"), s("design-refused-above")}
    rule = s.prefix("design-rule-gelu-partial", gpu=0, tensor="A")
    solved = s.prefix("design-solved")

    # The app has 60 s from its start to register on the AT-SPI bus and draw the design view.
    t0 = time.time()
    app = find_app(pid, int(os.environ.get("ATSPI_APP_WAIT", "60")))
    print(f"  application: {clean(app.get_name())!r} (pid {pid}), found in {time.time() - t0:.1f} s")

    def matrices(nodes):
        return [n for n in nodes if n.name in all_matrix_names]

    # The first frames: the design view's matrices appear once the view is laid out.
    nodes = wait_tree(app, lambda ns: len(matrices(ns)) >= 4 and any(n.name == walk_name for n in ns),
                      "the design view's four matrices and 'Step through my plan'",
                      max(5, 60 - (time.time() - t0)))
    print(f"  tree read: {len(nodes)} nodes, {time.time() - t0:.1f} s after start")

    print("  before:")
    found = {}
    for n in matrices(nodes):
        w, k = all_matrix_names[n.name]
        if w in found:
            raise CheckFailed(f"two matrices named for {w}: {found[w]} and {n}")
        found[w] = n
        print(f"    matrix {n}")
    for w in matrix:
        if w not in found:
            raise CheckFailed(f"no matrix named '{weights[w]}{sep}…' in the tree")
    want = {"qkv": "columns", "out": "rows", "fc1": "columns", "fc2": "rows"}
    for w, k in want.items():
        if found[w].name != matrix[w][k]:
            raise CheckFailed(f"challenge 5 starts on Megatron's split: expected {matrix[w][k]!r}, read {found[w].name!r}")
    for w in ("fc1", "fc2"):
        if "click" not in found[w].actions:
            raise CheckFailed(f"{found[w].name!r} can be changed in this challenge but offers no click action: {found[w]}")

    check_btn = one(nodes, lambda n: n.name == check_name, f"'{check_name}'")
    walk_btn = one(nodes, lambda n: n.name == walk_name, f"'{walk_name}'")
    verdict = one(nodes, lambda n: n.name.startswith(equals), f"verdict starting {equals!r}")
    print(f"    check  {check_btn}")
    print(f"    walk   {walk_btn}")
    print(f"    verdict {verdict}")
    if not walk_btn.enabled:
        raise CheckFailed(f"the plan equals the reference, yet '{walk_name}' is disabled: {walk_btn}")
    if "click" not in check_btn.actions:
        raise CheckFailed(f"'{check_name}' offers no click action: {check_btn}")

    # Change fc1's split through its accessible action: columns -> rows.
    act(found["fc1"], repr(found["fc1"].name))
    fc1_rows = matrix["fc1"]["rows"]
    nodes = wait_tree(
        app,
        lambda ns: any(n.name == fc1_rows for n in ns) and any(n.name in refused for n in ns),
        f"{fc1_rows!r} and the refusal after the action", 15,
    )
    # The walk button's state may follow a frame later: give it 5 s, then judge what is read.
    try:
        nodes = wait_tree(
            app,
            lambda ns: any(n.name == walk_name and not n.enabled for n in ns),
            f"'{walk_name}' disabled", 5,
        )
    except CheckFailed:
        nodes = walk(app)
    print("  after the action on fc1:")
    fc1 = one(nodes, lambda n: n.name.startswith(weights["fc1"] + sep), "matrix fc1")
    print(f"    matrix {fc1}")
    verdict = one(nodes, lambda n: n.name in refused, "refusal verdict")
    print(f"    verdict {verdict}")
    broken = one(nodes, lambda n: n.name.startswith(rule), f"broken rule starting {rule!r}")
    print(f"    rule   {broken}")
    walk_btn = one(nodes, lambda n: n.name == walk_name, f"'{walk_name}'")
    print(f"    walk   {walk_btn}")
    if any(n.name.startswith(equals) for n in nodes):
        raise CheckFailed("the refused plan still shows the 'equal to the reference' verdict")
    if walk_btn.enabled:
        raise CheckFailed(f"the plan is refused, yet '{walk_name}' is enabled: {walk_btn}")

    # The challenge asks to run the refused program anyway before it is solved: tick it.
    anyway_name = s("design-run-anyway")
    anyway = one(nodes, lambda n: n.name == anyway_name, f"'{anyway_name}'")
    print(f"    anyway {anyway}")
    act(anyway, repr(anyway_name))
    time.sleep(2)
    nodes = wait_tree(app, lambda ns: any(n.name == check_name for n in ns),
                      f"'{check_name}' after running it anyway", 15)

    # The challenge's own verdict: fc1 by rows hands GeLU a partial sum, which is the goal.
    check_btn = one(nodes, lambda n: n.name == check_name, f"'{check_name}'")
    act(check_btn, repr(check_name))
    nodes = wait_tree(app, lambda ns: any(n.name.startswith(solved) for n in ns),
                      f"the challenge verdict starting {solved!r}", 15)
    got = one(nodes, lambda n: n.name.startswith(solved) and n.name != s("design-solved-count"),
              "challenge verdict")
    print(f"    check  {got}")

    # fc1 back to columns through its action (rows -> whole -> columns): the plan equals the
    # reference again and "Step through my plan" is enabled.
    for frm, to in (("rows", "whole"), ("whole", "columns")):
        node = one(nodes, lambda n: n.name == matrix["fc1"][frm], f"matrix {matrix['fc1'][frm]!r}")
        act(node, repr(node.name))
        nodes = wait_tree(app, lambda ns: any(n.name == matrix["fc1"][to] for n in ns),
                          f"{matrix['fc1'][to]!r} after the action", 15)
    nodes = wait_tree(app, lambda ns: any(n.name == walk_name and n.enabled for n in ns),
                      f"'{walk_name}' enabled once fc1 is by columns again", 15)

    # "Step through my plan" through its action: the walkthrough opens on this plan (its banner),
    # and "Back to the design lab" through its action comes back.
    walk_btn = one(nodes, lambda n: n.name == walk_name, f"'{walk_name}'")
    act(walk_btn, repr(walk_name))
    banner = s.start_pattern("st-plan-walk")
    nodes = wait_tree(app, lambda ns: any(banner.match(n.name) for n in ns),
                      f"the walkthrough's banner matching {banner.pattern!r}", 15)
    print(f"    walkthrough {one(nodes, lambda n: bool(banner.match(n.name)), 'banner')}")
    back_name = s("st-plan-back")
    back = [n for n in nodes if n.name == back_name and n.actions]
    if not back:
        raise CheckFailed(f"no '{back_name}' button in the walkthrough")
    act(back[0], repr(back_name))
    nodes = wait_tree(app, lambda ns: len(matrices(ns)) >= 4, "the design view again", 15)

    # A collective's chip through its action: challenge 5 places its collectives by hand, and a
    # placed one's chip removes it (one fewer chip; the plan is refused without it).
    chip_name = "all-reduce"
    chips = [n for n in nodes if n.name == chip_name and n.role == "push button" and n.actions]
    if not chips:
        raise CheckFailed(f"no '{chip_name}' chip offered as a button in challenge 5")
    print(f"    chip   {chips[0]}  (×{len(chips)})")
    act(chips[0], f"the '{chip_name}' chip")
    nodes = wait_tree(
        app,
        lambda ns: len([n for n in ns if n.name == chip_name and n.role == "push button"]) < len(chips)
        and any(n.name == walk_name and not n.enabled for n in ns),
        f"one '{chip_name}' chip fewer and '{walk_name}' disabled", 15,
    )
    print(f"    after the chip: {len([n for n in nodes if n.name == chip_name and n.role == 'push button'])} "
          f"'{chip_name}' chip(s), '{walk_name}' disabled")

    report_unclear(nodes, set(all_matrix_names))
    print(f"  OK [{lang}] in {time.time() - t0:.1f} s")


def report_unclear(nodes, matrix_names):
    """What a screen-reader user would meet without a name, or with a name that says little."""
    notes = []
    for n in nodes:
        interactive = bool(n.actions) or n.role in CONTROL_ROLES
        if interactive and not n.name:
            notes.append(f"unnamed control: {n}")
        elif n.name in matrix_names and n.role != "push button":
            notes.append(f"matrix announced as a {n.role}, not a button: {n}")
        elif interactive and len(n.name.strip()) <= 1:
            notes.append(f"control named only {n.name!r}: {n}")
        elif n.role == "label" and n.name.strip() in {"›", "·", "|"}:
            notes.append(f"decorative text read aloud: {n}")
    # Collapse repeats, keep the count.
    counts = {}
    for line in notes:
        counts[line] = counts.get(line, 0) + 1
    if counts:
        print("  accessibility notes (not failures):")
        for line, c in counts.items():
            print(f"    {line}" + (f"  ×{c}" if c > 1 else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pid", type=int, required=True, help="the app's process id")
    ap.add_argument("--lang", choices=["en", "tr"], required=True)
    ap.add_argument("--dump", action="store_true", help="print the whole tree first")
    a = ap.parse_args()
    Atspi.init()
    Atspi.set_timeout(5000, 5000)
    print(f"atspi-check [{a.lang}]: tplab's design view, challenge 5, read over AT-SPI")
    try:
        if a.dump:
            app = find_app(a.pid, 60)
            time.sleep(3)
            for n in walk(app):
                print("  " * n.depth + str(n))
        check(a.pid, a.lang)
    except CheckFailed as e:
        print(f"atspi-check [{a.lang}]: FAILED: {e}", file=sys.stderr)
        return 1
    except GLib.Error as e:
        print(f"atspi-check [{a.lang}]: FAILED: an AT-SPI call failed: {e.message}", file=sys.stderr)
        return 1
    print(f"atspi-check [{a.lang}]: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
