#!/usr/bin/env python3
"""docs/architecture.md's arrows are the includes: each room's direct includes of other rooms
(`#include "ROOM/..."` under src/FROM/, core left out: every room may include it) are exactly the
rooms its arrow names, every room under src/ has its line (but core), and the includes have no
cycle. And the map's rooms are the tree's: every folder of code under src/ (and each of its code
subfolders) has its section (a "### `src/ROOM/`" heading), and every section names a folder that is there.
Usage: check_arrows.py SOURCE_DIR"""
import os
import re
import sys

src_dir = sys.argv[1]
doc = open(os.path.join(src_dir, "docs", "architecture.md"), encoding="utf-8").read()
block = doc[doc.index("## Modules and arrows"):]
block = block[block.index("```\n") + 4:]
block = block[:block.index("```")]

documented = {}
for line in block.splitlines():
    if line.startswith("tests/") or "─>" not in line:
        continue
    room = line.split()[0]
    targets = line.split("─>", 1)[1]
    targets = re.sub(r"\s{2,}\(.*$", "", targets)  # the note in parentheses
    documented[room] = {t.strip() for t in targets.split(",") if t.strip()} - {"core"}

rooms = sorted(d for d in os.listdir(os.path.join(src_dir, "src")) if os.path.isdir(os.path.join(src_dir, "src", d)))
include = re.compile(r'^#include "([a-z_]+)/', re.M)
actual = {}
for room in rooms:
    used = set()
    for dirpath, _, files in os.walk(os.path.join(src_dir, "src", room)):
        for name in files:
            if name.endswith((".cpp", ".hpp")):
                text = open(os.path.join(dirpath, name), encoding="utf-8", errors="replace").read()
                used |= set(include.findall(text))
    actual[room] = (used & set(rooms)) - {room, "core"}

problems = []
for room in rooms:
    if room == "core":
        if actual[room]:
            problems.append(f"core includes {sorted(actual[room])}: core depends on nothing")
        continue
    if room not in documented:
        problems.append(f"src/{room}/ has no arrow in docs/architecture.md")
        continue
    for extra in sorted(actual[room] - documented[room]):
        problems.append(f"{room} includes {extra}/ but its arrow does not name it")
    for unused in sorted(documented[room] - actual[room]):
        problems.append(f"{room}'s arrow names {unused}, which nothing in src/{room}/ includes")
for room in sorted(set(documented) - set(rooms)):
    problems.append(f"the arrow of {room} names no folder under src/")

# A section per folder that holds code, and no section of a folder that is gone.
def holds_code(path):
    return any(n.endswith((".cpp", ".hpp")) for n in os.listdir(path))
folders = set()
for room in rooms:
    base = os.path.join(src_dir, "src", room)
    if holds_code(base):
        folders.add(room)
    for sub in os.listdir(base):
        if os.path.isdir(os.path.join(base, sub)) and holds_code(os.path.join(base, sub)):
            folders.add(room + "/" + sub)
sections = set(re.findall(r"^### `src/([a-z_/]+)/`$", doc, re.M))
for folder in sorted(folders - sections):
    problems.append(f"src/{folder}/ has no section (### `src/{folder}/`) in docs/architecture.md")
for section in sorted(sections - folders):
    problems.append(f"docs/architecture.md has a section for src/{section}/, which holds no code")

# No cycle among the includes.
state = {}
def visit(room, path):
    if state.get(room) == "done":
        return
    if state.get(room) == "open":
        problems.append("a cycle: " + " -> ".join(path + [room]))
        return
    state[room] = "open"
    for dep in sorted(actual.get(room, ())):
        visit(dep, path + [room])
    state[room] = "done"
for room in rooms:
    visit(room, [])

if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"{len(rooms)} rooms, {sum(len(v) for v in actual.values())} arrows, {len(sections)} sections: "
      "the doc and the tree agree")
