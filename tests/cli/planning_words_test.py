#!/usr/bin/env python3
"""What a user reads speaks of the product, never of how the project was planned: no "issue 33", no
"the seed's indicator", no "wave 2" in the README, docs/, the Python package, every command's --help,
every finding's `baton explain` text, the man pages and the config template. A project of someone
else's may be cited by its own issue ("its issue 295") or URL.

Usage: planning_words_test.py BATON SOURCE_DIR"""
import pathlib
import re
import subprocess
import sys

WORDS = re.compile(r"(?<!its )\b[Ii]ssues? \d+|\bthe seed's|\bseed document|\bwave \d|"
                   r"\bthe brief\b|\bthe issue\b|\bthis issue\b", re.IGNORECASE)


def main():
    baton, source = sys.argv[1], pathlib.Path(sys.argv[2])
    texts = {}
    for path in [source / "README.md", source / "CONTRIBUTING.md", *sorted((source / "docs").glob("*.md")),
                 *sorted((source / "python").rglob("*.py")), *sorted((source / "deploy").rglob("*"))]:
        if path.is_file() and "tests" not in path.parts and path.suffix in (".md", ".py", ".yml", ".yaml",
                                                                              ".json", ".toml", ".service", ""):
            texts[str(path.relative_to(source))] = path.read_text(errors="replace")

    def out(*args):
        r = subprocess.run([baton, *args], capture_output=True, text=True, timeout=30)
        return r.stdout + r.stderr

    top = out("--help")
    texts["baton --help"] = top
    commands = re.findall(r"^  (\w+)\s{2,}", top.split("Subcommands:", 1)[1], re.MULTILINE)
    assert len(commands) > 20, commands
    for c in commands:
        texts[f"baton {c} --help"] = out(c, "--help")
        texts[f"baton man {c}"] = out("man", c)
    rules = re.findall(r"^(\w+)\s{2,}", out("explain"), re.MULTILINE)
    assert len(rules) > 30, rules
    for r in rules:
        texts[f"baton explain {r}"] = out("explain", r)

    bad = []
    for where, text in texts.items():
        for n, line in enumerate(text.splitlines(), 1):
            for m in WORDS.finditer(line):
                bad.append(f"{where}:{n}: {m.group(0)!r} in: {line.strip()[:140]}")
    for b in bad:
        print("planning words:", b)
    print(f"planning_words_test: {len(texts)} texts read ({len(commands)} commands, {len(rules)} findings)")
    if bad:
        sys.exit(1)
    print("planning_words_test: every check passed")


if __name__ == "__main__":
    main()
