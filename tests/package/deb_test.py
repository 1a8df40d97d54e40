"""The package `make deb` built, installed on this machine with `dpkg -i` and
purged again (`make deb-test`, as root): dpkg -i succeeds and warns of
nothing; the binary, the unit, the environment file (0600) and the man page
are where Debian and the unit expect them; the webhooker user and
/var/lib/webhooker (0700, the user's) exist; the service starts the daemon,
which answers /healthz: with systemctl where systemd runs (on a free port,
by a runtime drop-in), otherwise as the unit would run it (its User, its
Environment=, the environment file, its ExecStart); `dpkg --purge` removes
the files and the data folder (the webhooker user stays, as Debian's system
users do).

Skips (exit 77) when not root, when there is no .deb (WEBHOOKER_DEB, or the
one in build-deb/), or when a webhooker package is installed already: this
test would replace and then remove a real installation."""
import glob
import os
import pathlib
import pwd
import re
import stat
import subprocess
import sys
import time

from support import SKIP, clean_environment, free_port, http, run

source = pathlib.Path(os.environ.get("WEBHOOKER_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
UNIT = "webhooker.service"


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def find_deb():
    if os.environ.get("WEBHOOKER_DEB"):
        return pathlib.Path(os.environ["WEBHOOKER_DEB"])
    debs = sorted(glob.glob(str(source / "build-deb" / "webhooker_*.deb")))
    if not debs:
        skip("no .deb: run `make deb` first, or set WEBHOOKER_DEB")
    return pathlib.Path(debs[-1])


def installed():
    return subprocess.run(["dpkg-query", "-W", "-f", "${Status}", "webhooker"],
                          capture_output=True, text=True).stdout.endswith(" installed")


def unit_file(files):
    units = [f for f in files if f.endswith("/" + UNIT) and "/systemd/system/" in f]
    assert len(units) == 1, f"the package installs {len(units)} units: {units}"
    return pathlib.Path(units[0])


def service_environment(unit, environment_file, port):
    """What systemd would pass the daemon: the unit's Environment=, then the
    environment file's active lines; the port a free one."""
    env = {}
    for line in re.findall(r"^Environment=(.*)$", unit.read_text(), re.M):
        env.update(item.split("=", 1) for item in line.split())
    env.update(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", environment_file.read_text(), re.M))
    env["PORT"] = str(port)
    return env


def wait_healthy(port, process=None):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the daemon exited {process.returncode}:\n{process.stderr.read()}")
        try:
            status, body = http("GET", f"http://127.0.0.1:{port}/healthz")
            if status == 200:
                return body
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"no answer on /healthz at port {port} within 30 s")


def start_with_systemd(port):
    dropin = pathlib.Path("/run/systemd/system") / (UNIT + ".d")
    dropin.mkdir(parents=True, exist_ok=True)
    (dropin / "test-port.conf").write_text(f"[Service]\nEnvironment=PORT={port}\n")
    try:
        run(["systemctl", "daemon-reload"])
        run(["systemctl", "restart", UNIT])
        wait_healthy(port)
        assert run(["systemctl", "is-active", UNIT]).stdout.strip() == "active"
        run(["systemctl", "stop", UNIT])
    finally:
        (dropin / "test-port.conf").unlink()
        dropin.rmdir()
        subprocess.run(["systemctl", "daemon-reload"])


def start_as_the_unit(unit, environment_file, port):
    """Without systemd: the unit's ExecStart as its User, with its environment
    and its UMask."""
    text = unit.read_text()
    command = re.search(r"^ExecStart=(.*)$", text, re.M).group(1).split()
    user = re.search(r"^User=(\S+)$", text, re.M).group(1)
    umask = re.search(r"^UMask=(\d+)$", text, re.M).group(1)
    env = clean_environment(service_environment(unit, environment_file, port))
    process = subprocess.Popen(["setpriv", "--reuid", user, "--regid", user, "--init-groups",
                                "sh", "-c", f'umask {umask} && exec "$@"', "sh", *command],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    try:
        wait_healthy(port, process)
        data = pathlib.Path(env["DATA_DIR"])
        token = data / "admin-token.txt"  # no terminal: the first start writes it there
        assert token.exists(), "a first start without a terminal wrote no admin-token.txt"
        info = token.stat()
        assert stat.S_IMODE(info.st_mode) == 0o600, oct(info.st_mode)
        assert pwd.getpwuid(info.st_uid).pw_name == user
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0, process.stderr.read()
        process.stderr.close()


def main():
    if os.geteuid() != 0:
        skip("dpkg -i needs root")
    deb = find_deb()
    if installed():
        skip("a webhooker package is installed already; this test would remove it")
    try:
        installing = subprocess.run(["dpkg", "-i", str(deb)], capture_output=True, text=True)
        output = installing.stdout + installing.stderr
        assert installing.returncode == 0, f"dpkg -i {deb} failed:\n{output}"
        assert "warn" not in output.lower(), f"dpkg -i warned:\n{output}"

        files = run(["dpkg", "-L", "webhooker"]).stdout.split()
        for path in ["/usr/bin/webhooker", "/etc/default/webhooker",
                     "/usr/share/man/man1/webhooker.1.gz"]:
            assert path in files and os.path.exists(path), f"{path} not installed: {files}"
        unit = unit_file(files)
        environment_file = pathlib.Path("/etc/default/webhooker")
        assert stat.S_IMODE(environment_file.stat().st_mode) == 0o600
        run(["/usr/bin/webhooker", "--version"])

        user = pwd.getpwnam("webhooker")
        data = pathlib.Path("/var/lib/webhooker")
        info = data.stat()
        assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700, oct(info.st_mode)
        assert info.st_uid == user.pw_uid and info.st_gid == user.pw_gid

        port = free_port()
        if pathlib.Path("/run/systemd/system").is_dir():
            start_with_systemd(port)
            how = "systemctl"
        else:
            start_as_the_unit(unit, environment_file, port)
            how = "the unit's ExecStart as its user (no systemd here)"

        run(["dpkg", "--purge", "webhooker"])
        assert not installed()
        for path in ["/usr/bin/webhooker", "/etc/default/webhooker", str(unit), str(data)]:
            assert not os.path.exists(path), f"{path} is left after dpkg --purge"
        print(f"installed {deb.name}, started it with {how}, purged it")
    finally:
        if installed():
            subprocess.run(["dpkg", "--purge", "webhooker"], capture_output=True)


if __name__ == "__main__":
    main()
