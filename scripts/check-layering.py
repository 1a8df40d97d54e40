#!/usr/bin/env python3
"""Fails when a source file includes a layer its own may not include.

Usage: check-layering.py SOURCE_ROOT

LAYERS below is the one list of the allowed arrows (docs/architecture.md draws
them): each top-level folder of C++ code with the folders its files may
include besides their own. A folder of C++ code that is not listed fails the
check too, so a new layer is placed in the order before it is used.
"""
import os
import re
import subprocess
import sys

# Top to bottom; a layer may include only what its entry names.
LAYERS = {
    "app": {"server", "engine", "targets", "routing", "net", "storage", "base"},
    "server": {"engine", "targets", "routing", "net", "storage", "base"},
    "engine": {"targets", "routing", "net", "storage", "base"},
    "targets": {"routing", "net", "storage", "base"},
    "routing": {"storage", "base"},
    "net": {"base"},
    "storage": {"base"},
    "base": set(),
}
# Code that drives the layers from outside them: any layer, and the test
# helpers (tests/support), but never each other's code otherwise.
DRIVERS = {
    "tests": set(LAYERS) | {"bench"},
    "bench": set(LAYERS) | {"tests"},
    "fuzz": set(LAYERS) | {"tests"},
}
ALLOWED = {**LAYERS, **DRIVERS}
# Folders that hold no code of ours, or code that includes nothing of ours.
IGNORED = {"subprojects", "debian", "packaging", "migrations", "web", "docs", "scripts"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]*"', re.MULTILINE)
SOURCE_SUFFIXES = (".cpp", ".h", ".cc", ".hpp")


def source_files(root):
    """The repository's C++ files, relative to root: git's list if there is
    one (build folders hold copies of the tree), else a walk that skips
    meson build folders."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                              "--exclude-standard"],
                             check=True, capture_output=True, text=True).stdout
        return [p for p in out.splitlines() if p.endswith(SOURCE_SUFFIXES)]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")
                       and not os.path.exists(os.path.join(folder, d, "meson-private"))]
            rel = os.path.relpath(folder, root)
            found += [os.path.normpath(os.path.join(rel, f)) for f in files
                      if f.endswith(SOURCE_SUFFIXES)]
        return found


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = sys.argv[1]
    problems = []
    checked = 0
    for path in sorted(source_files(root)):
        parts = path.split("/")
        if len(parts) < 2 or parts[0] in IGNORED:
            continue
        layer = parts[0]
        if layer not in ALLOWED:
            problems.append(f"{path}: folder {layer}/ is not in LAYERS of {__file__}")
            continue
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        checked += 1
        for match in INCLUDE.finditer(text):
            target = match.group(1)
            if target == layer or target not in ALLOWED:
                continue  # its own layer, or a library's header
            if target not in ALLOWED[layer]:
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"{path}:{line}: {layer}/ may not include {target}/ "
                                f"(\"{match.group(0).strip()}\")")
    for problem in problems:
        print(problem)
    if checked == 0:
        print(f"no source files found under {root}")
        return 1
    print(f"{checked} files checked, {len(problems)} layering violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
