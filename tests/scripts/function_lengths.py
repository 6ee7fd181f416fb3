#!/usr/bin/env python3
"""The functions of src/ longer than N lines (default 100), longest first: from a definition's first line
at column 0 to the next closing brace at column 0, comments and blank lines included, so it counts what
a reader scrolls through. Rough by design (no parser): clang-format keeps both ends at column 0.
Usage: function_lengths.py SOURCE_DIR [N]"""
import os
import re
import sys

root = os.path.join(sys.argv[1], "src")
limit = int(sys.argv[2]) if len(sys.argv) > 2 else 100
head = re.compile(r"^(?!namespace|struct|class|enum|union|template|extern)[A-Za-z].*\(.*[^;]\s*\{\s*$")
found = []
for dirpath, _, files in os.walk(root):
    for name in sorted(files):
        if not name.endswith(".cpp"):
            continue
        path = os.path.join(dirpath, name)
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        i = 0
        while i < len(lines):
            if head.match(lines[i]):
                j = i + 1
                while j < len(lines) and not lines[j].startswith("}"):
                    j += 1
                found.append((j - i + 1, os.path.relpath(path, sys.argv[1]), i + 1, lines[i].strip()[:80]))
                i = j
            i += 1
for n, path, line, text in sorted(found, reverse=True):
    if n > limit:
        print(f"{n:5d} {path}:{line} {text}")
