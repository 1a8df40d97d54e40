#!/usr/bin/env python3
"""Checks that every relative link in README.md and docs/*.md resolves.

A link `[text](path)` must name a file or folder that exists, relative to the
file it is in; `[text](path#anchor)` and `[text](#anchor)` must also name a
heading of that Markdown file, spelled as GitHub spells heading anchors.
Links to other sites (`https:`, `mailto:`) are not followed. Code blocks and
inline code are skipped: they show text, not links.

    check-doc-links.py [SOURCE_DIR]     default: the repository this script is in

Prints one line per broken link and exits 1 if there is any.
"""
import re
import sys
from pathlib import Path

import doc_check

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def prose_lines(text):
    """(line number, line) outside fenced code blocks, inline code blanked."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
                continue
            if stripped.startswith(fence):
                fence = None
                continue
        if fence is None:
            yield number, INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation
    removed, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        names = set()
        text = path.read_text(encoding="utf-8")
        for _, line in prose_lines(text):
            names.update(EXPLICIT_ANCHOR.findall(line))
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            names.add(base if count == 0 else f"{base}-{count}")
        cache[path] = names
    return cache[path]


def broken_links(root):
    files = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    for source in files:
        text = source.read_text(encoding="utf-8")
        for number, line in prose_lines(text):
            for target in LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
                    continue  # another site, or mailto:
                path_part, _, anchor = target.partition("#")
                where = f"{source.relative_to(root)}:{number}: {target}"
                resolved = (source.parent / path_part).resolve() if path_part else source
                if not resolved.exists():
                    yield f"{where}: no such file"
                    continue
                if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                    yield f"{where}: no heading with that anchor in {resolved.name}"


if __name__ == "__main__":
    sys.exit(doc_check.run(broken_links, "every link resolves", "broken links"))
