"""The command line both documentation checks share: find the repository,
run one check over it, print each problem and a summary, exit 1 on any."""
import sys
from pathlib import Path


def run(check, clean_message, problem_noun):
    """check(root) yields one line per problem in the repository at root."""
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    found = list(check(root.resolve()))
    for line in found:
        print(line)
    print(f"{len(found)} {problem_noun}" if found else clean_message)
    return 1 if found else 0
