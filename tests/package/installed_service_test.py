"""What `meson install` puts on a machine, installed from this build into a
temp root (no second compile, nothing system-wide): the binary started the
way the unit starts it, with the unit's environment and the installed
environment file, answers /healthz; the environment file lists every setting
of `webhooker serve --help` at its default; an invalid value there stops the
daemon with one line naming the variable; under systemd (stdout is the
journal) a generated admin token is not printed."""
import json
import os
import pathlib
import re
import shutil
import stat
import subprocess

from support import Daemon, clean_environment, http, run, temp_dir

build = pathlib.Path(os.environ["WEBHOOKER_BUILD_DIR"])


def installed_file(root, folder, name):
    """Where meson installed FOLDER/NAME (e.g. bin/webhooker), under root."""
    listing = json.loads(run(["meson", "introspect", "--installed", str(build)]).stdout)
    found = [p for p in listing.values() if pathlib.PurePath(p).parts[-2:] == (folder, name)]
    assert len(found) == 1, f"{folder}/{name} installed {len(found)} times: {listing}"
    return root / found[0].lstrip("/")


def settings_in_help(binary):
    """{variable: default} of every option of `webhooker serve --help`."""
    text = run([binary, "serve", "--help"]).stdout
    settings = {}
    # "  --port INT:INT in [0 - 65535]=8080 (Env:PORT)": the default follows '='.
    for m in re.finditer(r"^\s+--\S+(.*?)\(Env:(\w+)\)", text, re.M):
        default = re.search(r"=(\S+)\s*$", m.group(1))
        settings[m.group(2)] = default.group(1) if default else ""
    for m in re.finditer(r"^  ((?:WEBHOOKER|METRICS)_\w+)\s", text.split("Environment only:")[1], re.M):
        settings[m.group(1)] = ""
    return settings


def environment_file_lines(path):
    """{variable: value} of the KEY=VALUE lines, commented out or not."""
    return dict(re.findall(r"^#?([A-Z][A-Z0-9_]*)=(.*)$", path.read_text(), re.M))


def unit_environment(unit):
    """The unit's Environment= assignments, as systemd passes them."""
    pairs = {}
    for line in re.findall(r"^Environment=(.*)$", unit.read_text(), re.M):
        pairs.update(item.split("=", 1) for item in line.split())
    return pairs


def service_environment(unit, environment_file, data_dir):
    """The unit's environment, the file's active lines over it, then this
    test's data folder and port 0 (systemd would give /var/lib/webhooker)."""
    env = unit_environment(unit)
    env.update(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", environment_file.read_text(), re.M))
    env.update({"DATA_DIR": str(data_dir), "PORT": "0"})
    return env


with temp_dir() as name:
    tmp = pathlib.Path(name)
    root = tmp / "root"
    run(["meson", "install", "-C", str(build), "--destdir", str(root), "--no-rebuild", "--quiet"])
    binary = installed_file(root, "bin", "webhooker")
    unit = installed_file(root, "system", "webhooker.service")
    environment_file = installed_file(root, "default", "webhooker")
    assert installed_file(root, "nginx", "webhooker.conf").is_file()
    # Everything under the build's prefix, the unit too.
    prefix = next(o["value"] for o in json.loads(
        run(["meson", "introspect", "--buildoptions", str(build)]).stdout) if o["name"] == "prefix")
    assert str(unit).startswith(str(root) + prefix + "/"), f"the unit is not under {prefix}: {unit}"
    # The docs, side by side as the README links them, and the man page.
    readme = installed_file(root, "webhooker", "README.md")
    assert (readme.parent / "docs" / "architecture.md").is_file(), "docs/ is not installed"
    if shutil.which("help2man"):
        page = installed_file(root, "man1", "webhooker.1").read_text()
        for subcommand in ("serve", "webhooks", "targets", "cluster"):
            assert subcommand in page, f"the man page does not mention {subcommand}"
        assert "/etc/default/webhooker" in page, "the man page has no FILES section"
    # What the installed files point to in the README exists there.
    headings = set(re.findall(r"^#+ (.+)$", readme.read_text(), re.M))
    for text in (environment_file.read_text(),
                 installed_file(root, "nginx", "webhooker.conf").read_text()):
        for section in re.findall(r'README,\s*#?\s*"([^"]+)"', text):
            assert section in headings, f'README has no section "{section}"'
    assert stat.S_IMODE(environment_file.stat().st_mode) == 0o600, "the environment file is not 0600"
    assert re.search(r"^EnvironmentFile=-/.*/default/webhooker$", unit.read_text(), re.M)
    assert f"ExecStart={'/' + str(binary.relative_to(root))} serve" in unit.read_text(), \
        "the unit does not start the installed binary"

    # The file documents exactly the settings the binary has, with their defaults.
    documented = environment_file_lines(environment_file)
    expected = settings_in_help(str(binary))
    assert len(expected) > 20, f"help parsed wrongly: {expected}"
    assert documented == expected, (
        f"environment file and `serve --help` differ: missing {set(expected) - set(documented)}, "
        f"extra {set(documented) - set(expected)}, defaults "
        f"{ {k: (documented[k], v) for k, v in expected.items() if documented.get(k, v) != v} }")

    # Started as the unit starts it: `webhooker serve` and the environment only.
    env = service_environment(unit, environment_file, tmp / "data")
    with Daemon(str(binary), [], env) as daemon:
        status, body = http("GET", daemon.url("/healthz"))
        assert status == 200, f"/healthz: {status} {body!r}"
        assert "listen=127.0.0.1:" in daemon.log(), "the unit's listen address was not used"
    assert stat.S_IMODE((tmp / "data").stat().st_mode) == 0o700

    # A wrong value in the environment file: exit 2 (the unit does not
    # restart on it), one line that names the variable, nothing written.
    for setting in ("WEBHOOKER_WORKERS=lots", "WEBHOOKER_TRUSTED_PROXIES=10.0.0.0/33"):
        (tmp / "bad").write_text(environment_file.read_text() + setting + "\n")
        env = service_environment(unit, tmp / "bad", tmp / "fresh")
        bad = subprocess.run([str(binary), "serve"], env=clean_environment(env),
                             capture_output=True, text=True, timeout=30)
        variable = setting.split("=")[0]
        assert bad.returncode == 2, f"{setting}: exit {bad.returncode}: {bad.stderr}"
        assert bad.stdout == "" and bad.stderr.count("\n") == 1, f"not one line: {bad.stderr!r}"
        assert variable in bad.stderr, f"{variable} is not named: {bad.stderr!r}"
        assert not (tmp / "fresh").exists(), f"{setting}: the data folder was created"

    # stdout as systemd's journal: JOURNAL_STREAM names the stream by
    # device:inode, here a pipe's. The token goes to a 0600 file, not the journal.
    read_end, write_end = os.pipe()
    journal = os.fstat(write_end)
    env = service_environment(unit, environment_file, tmp / "journal-data")
    env["JOURNAL_STREAM"] = f"{journal.st_dev}:{journal.st_ino}"
    service = subprocess.Popen([str(binary), "serve"], env=clean_environment(env),
                               stdout=write_end, stderr=subprocess.STDOUT)
    os.close(write_end)
    with os.fdopen(read_end) as journal_lines:
        printed = ""
        for line in journal_lines:
            printed += line
            if "listening" in line:
                break
        service.terminate()
        service.wait(timeout=30)
    assert "listening" in printed, f"the service did not start:\n{printed}"
    assert "whk_" not in printed, f"the admin token went to the journal:\n{printed}"
    assert "admin-token.txt" in printed, f"no word on where the token is:\n{printed}"
    token_file = tmp / "journal-data" / "admin-token.txt"
    assert token_file.read_text().startswith("whk_"), "no token in the token file"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600, "the token file is not 0600"
print("installed, started from the environment file, /healthz answered")
