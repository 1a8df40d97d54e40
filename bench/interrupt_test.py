"""SIGTERM to webhooker_bench while its daemon runs leaves no process and no
temp folder behind (bench/leftover_janitor.h).

Usage: interrupt_test.py <webhooker_bench>   (WEBHOOKER_BIN in the environment)
"""
import os
import signal
import subprocess
import sys
import tempfile
import time


def stat_fields(pid):
    """The fields of /proc/<pid>/stat after the command name; None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid):
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"  # a zombie has ended


def daemons_of(pid):
    """Children of pid running `webhooker serve` (not the bench's janitor)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = stat_fields(entry)
        if fields is None or int(fields[1]) != pid:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if b"serve" in cmdline.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def main():
    bench = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        # slow-clients holds its daemon for seconds even with --smoke, so the
        # signal lands while it runs; a quick scenario could end first.
        run = subprocess.Popen(
            [bench, "--smoke", "--only", "slow-clients", "--out", os.devnull],
            env=dict(os.environ, TMPDIR=tmp),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        daemons, deadline = [], time.time() + 60
        while not daemons and time.time() < deadline and run.poll() is None:
            daemons = daemons_of(run.pid)
            time.sleep(0.05)
        if not daemons:
            run.kill()
            sys.exit("the bench started no daemon within 60 s")
        scratch = os.listdir(tmp)
        run.send_signal(signal.SIGTERM)
        code = run.wait(30)
        errors = []
        if code != -signal.SIGTERM:  # killed by it, as the shell expects
            errors.append(f"exit status {code}, expected death by SIGTERM")
        # The janitor cleans up once the bench is gone: give it a moment.
        deadline = time.time() + 10
        while time.time() < deadline and (
                os.listdir(tmp) or any(alive(pid) for pid in daemons)):
            time.sleep(0.05)
        running = [pid for pid in daemons if alive(pid)]
        if running:
            errors.append(f"daemons still running: {running}")
        if os.listdir(tmp):
            errors.append(f"left behind in {tmp}: {os.listdir(tmp)} (scratch was {scratch})")
        if errors:
            print(run.stderr.read().decode(errors="replace"))
            sys.exit("; ".join(errors))
        print(f"daemons {daemons} killed, scratch {scratch} removed, exit {code}")


main()
