#!/usr/bin/env python3
"""Checks the documentation's shape, which keeps it describing today.

- README.md has at most 350 lines, docs/performance.md at most 400.
- Every entry of docs/decisions.md (a top-level "- **...**" bullet and its
  indented lines) has 3 to 8 lines: what, why, the limit; evidence is linked.
- No page speaks of numbered work rounds ("the fifth round", "this round"):
  history stays in git.

    check-doc-shape.py [SOURCE_DIR]     default: the repository this script is in

Prints one line per problem and exits 1 if there is any.
"""
import re
import sys
from pathlib import Path

import doc_check

MAX_LINES = {"README.md": 350, "docs/performance.md": 400}
ENTRY_LINES = (3, 8)
ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
            "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth")
ROUND = re.compile(r"\b(this|last|previous|next|" + "|".join(ORDINALS.split())
                   + r"|\d+(?:st|nd|rd|th)) round\b", re.I)


def problems(root):
    for name, limit in MAX_LINES.items():
        count = len((root / name).read_text(encoding="utf-8").splitlines())
        if count > limit:
            yield f"{name}: {count} lines, at most {limit}"

    decisions = root / "docs" / "decisions.md"
    entry = None  # [first line number, title, lines]
    entries = []
    for number, line in enumerate(decisions.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("- **"):
            entry = [number, line[4:].split("**")[0], 1]
            entries.append(entry)
        elif entry and line.startswith("  ") and line.strip():
            entry[2] += 1
        else:
            entry = None
    low, high = ENTRY_LINES
    for number, title, lines in entries:
        if not low <= lines <= high:
            yield f"docs/decisions.md:{number}: \"{title}\" has {lines} lines, {low} to {high}"

    for page in [root / "README.md"] + sorted((root / "docs").glob("*.md")):
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            match = ROUND.search(line)
            if match:
                yield f"{page.relative_to(root)}:{number}: \"{match.group(0)}\": history stays in git"


if __name__ == "__main__":
    sys.exit(doc_check.run(problems, "the documentation has its shape", "problems"))
