"""The systemd unit as built (build/packaging/webhooker.service): systemd's own
checker finds nothing to say about it, and its exposure score is at most 2.0."""
import os
import pathlib
import re
import sys

from support import require_tools, run, temp_dir

MAX_EXPOSURE = 2.0

require_tools("systemd-analyze")
unit = pathlib.Path(os.environ["WEBHOOKER_UNIT"])
binary = os.environ["WEBHOOKER_BIN"]

# verify insists that ExecStart's program exists, and it is not installed on
# this machine: the copy runs the binary just built, every other line as is.
with temp_dir() as tmp:
    text = unit.read_text()
    start = re.search(r"^ExecStart=(\S+)", text, re.M)
    assert start, "the unit has no ExecStart="
    copy = pathlib.Path(tmp) / unit.name
    copy.write_text(text.replace(start.group(0), "ExecStart=" + binary))
    verify = run(["systemd-analyze", "verify", "--man=no", str(copy)])
    # An unknown key or a bad value is only a warning: any output fails.
    said = (verify.stdout + verify.stderr).strip()
    assert not said, f"systemd-analyze verify:\n{said}"

security = run(["systemd-analyze", "security", "--offline=true", "--no-pager", str(unit)])
score = re.search(r"Overall exposure level for \S+: ([0-9.]+)", security.stdout)
assert score, f"no exposure level in:\n{security.stdout}"
exposure = float(score.group(1))
print(f"exposure {exposure} (at most {MAX_EXPOSURE})")
if exposure > MAX_EXPOSURE:
    print(security.stdout)
    sys.exit(1)
