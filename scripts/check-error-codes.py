#!/usr/bin/env python3
"""Fails when an error code is written as a literal outside base/error_codes.h,
or when that registry names one code twice.

Usage: check-error-codes.py SOURCE_ROOT

Codes reach makeError(), sendError(), the front door's errorResponse() and
ingest's refuse() by their error_code:: names only, so every code the API can
answer is listed in one place.
"""
import pathlib
import re
import sys

FOLDERS = ["app", "server", "engine", "targets", "routing", "net", "storage", "base"]
REGISTRY = "base/error_codes.h"
LITERAL_CODE = re.compile(
    r'\b(?:makeError\(|sendError\([^,()]+,\s*\d+,\s*|errorResponse\(\s*\d+,\s*|refuse\(\s*\d+,\s*)'
    r'"([a-z][a-z0-9_]*)"')
DEFINITION = re.compile(r'constexpr std::string_view (k\w+) = "([a-z0-9_]+)";')


def main():
    if len(sys.argv) != 2:
        print("usage: check-error-codes.py SOURCE_ROOT", file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    problems = []
    texts = {}
    for name, text in DEFINITION.findall((root / REGISTRY).read_text(encoding="utf-8")):
        if text in texts:
            problems.append(f"{REGISTRY}: \"{text}\" is both {texts[text]} and {name}")
        texts[text] = name
    for folder in FOLDERS:
        for path in sorted((root / folder).glob("**/*")):
            if path.suffix not in (".cpp", ".h"):
                continue
            source = path.read_text(encoding="utf-8")
            for match in LITERAL_CODE.finditer(source):
                line = source.count("\n", 0, match.start()) + 1
                known = texts.get(match.group(1))
                hint = f"error_code::{known}" if known else f"a new entry in {REGISTRY}"
                problems.append(f"{path.relative_to(root)}:{line}: \"{match.group(1)}\" "
                                f"written as a literal; use {hint}")
    for problem in problems:
        print(problem)
    print(f"{len(texts)} error codes, {len(problems)} problems")
    return 1 if problems or not texts else 0


if __name__ == "__main__":
    sys.exit(main())
