"""What the package tests share: a temp folder, the real daemon started as a
child on 127.0.0.1, plain HTTP calls, and a skip (exit 77) when a tool the
test drives is not installed. Like tests/support/daemon_process.h, children
get our environment minus webhooker's own variables, so a developer's shell
never changes what a test sees."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77  # meson's exit code for a skipped test

WEBHOOKER_VARIABLES = re.compile(r"^(WEBHOOKER_|METRICS_)|^(DATA_DIR|PORT|DEBUG)$")


def require_tools(*names):
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        print(f"SKIP: {', '.join(missing)} not installed (scripts/install-deps installs it)")
        sys.exit(SKIP)


def clean_environment(extra=None):
    env = {k: v for k, v in os.environ.items() if not WEBHOOKER_VARIABLES.search(k)}
    env.update(extra or {})
    return env


def temp_dir():
    return tempfile.TemporaryDirectory(prefix="webhooker-test-")


def free_port():
    """A port that was free a moment ago: for programs that cannot take port 0."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_flags(data_dir, *more):
    """`serve` flags for a test: its own data folder, loopback, any free port."""
    return ["--data-dir", str(data_dir), "--listen", "127.0.0.1", "--port", "0", *more]


class Daemon:
    """`webhooker serve ARGS` until it says where it listens; stopped with
    SIGTERM on exit. Its log (stderr) goes to a file, read with log()."""

    def __init__(self, binary, args, env=None):
        self.log_file = tempfile.TemporaryFile()
        self.process = subprocess.Popen([binary, "serve", *args], env=clean_environment(env),
                                        stdout=subprocess.PIPE, stderr=self.log_file, text=True)
        self.port = None
        for line in self.process.stdout:
            if m := re.search(r"webhooker listening on http://[^ ]+:(\d+)", line):
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.process.wait(timeout=30)
            raise AssertionError(f"daemon exited before listening:\n{self.log()}")

    def log(self):
        self.log_file.seek(0)
        return self.log_file.read().decode(errors="replace")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.process.stdout.close()
        self.log_file.close()


def http(method, url, body=None, headers=None, context=None):
    """(status, body bytes); an HTTP error status is an answer, not an exception."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def run(command, **kwargs):
    """Runs a command to its end; its output in the failure message when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, command))} exited {result.returncode}:\n"
                             f"{result.stdout}{result.stderr}")
    return result


ADMIN_TOKEN = "whk_package-test-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def create_webhook(daemon, name="shop"):
    """(webhook id, entrypoint id) of a new webhook, through the admin API."""
    status, body = http("POST", daemon.url("/api/v1/webhooks"),
                        json.dumps({"name": name}).encode(), AUTH)
    assert status in (200, 201), f"create webhook: {status} {body!r}"
    webhook = json.loads(body)
    return webhook["id"], webhook["entrypoints"][0]["id"]
