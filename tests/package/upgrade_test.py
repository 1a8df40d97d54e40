"""A data folder the first release wrote (fixtures/v1-data: schema 1 of the
main and the events databases, made by fixtures/make-v1-data.sh) is migrated
by this binary, which then serves its history; a database newer than the
binary knows is refused, untouched, with a message saying what to do."""
import hashlib
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess

from support import (ADMIN_TOKEN, AUTH, Daemon, clean_environment, http, serve_flags, temp_dir)

binary = os.environ["WEBHOOKER_BIN"]
fixture = pathlib.Path(__file__).parent / "fixtures" / "v1-data"
WEBHOOK = "0b9a3c1e-5f6d-4e2a-9c71-2d8e4f6a1b30"


def webhooker(*args):
    return subprocess.run([binary, *args], env=clean_environment(), capture_output=True,
                          text=True, timeout=30)


def schema_versions(data):
    def version(file):
        with sqlite3.connect(f"file:{file}?mode=ro", uri=True) as db:
            return db.execute("select max(version) from schema_migrations").fetchone()[0]
    return version(data / "webhooker.db"), version(data / f"events-{WEBHOOK}.db")


with temp_dir() as name:
    data = pathlib.Path(name) / "data"
    shutil.copytree(fixture, data)
    assert schema_versions(data) == (1, 1), "the fixture is not at schema 1 any more"

    migrated = webhooker("migrate", "--data-dir", str(data))
    assert migrated.returncode == 0, f"migrate: {migrated.stdout}{migrated.stderr}"
    assert migrated.stdout.count("migrated from schema 1") == 2, migrated.stdout
    main_version, events_version = schema_versions(data)
    assert main_version > 1 and events_version > 1, (main_version, events_version)

    with Daemon(binary, serve_flags(data), {"WEBHOOKER_ADMIN_TOKEN": ADMIN_TOKEN}) as daemon:
        status, body = http("GET", daemon.url(f"/api/v1/webhooks/{WEBHOOK}/events"), None, AUTH)
        assert status == 200, f"events: {status} {body!r}"
        events = json.loads(body)["events"]
        assert sorted(e["id"] for e in events) == [
            "e0000001-0000-4000-8000-000000000000", "e0000002-0000-4000-8000-000000000000"], events

    # One migration ahead of this binary, recorded as a newer binary records it (its row and the
    # header's version in one transaction): refused, and not a byte written.
    with sqlite3.connect(data / f"events-{WEBHOOK}.db") as db:
        db.execute("insert into schema_migrations values (?, 'from the future', '2030-01-01')",
                   (events_version + 1,))
        db.execute(f"pragma user_version = {events_version + 1}")
    db.close()
    before = hashlib.sha256((data / f"events-{WEBHOOK}.db").read_bytes()).hexdigest()
    refused = webhooker("migrate", "--data-dir", str(data))
    assert refused.returncode != 0, f"a newer schema was accepted: {refused.stdout}"
    assert f"has schema version {events_version + 1}" in refused.stderr, refused.stderr
    assert "upgrade webhooker" in refused.stderr, refused.stderr
    after = hashlib.sha256((data / f"events-{WEBHOOK}.db").read_bytes()).hexdigest()
    assert before == after, "the refused database was written to"
print("schema 1 migrated and its events listed; a newer schema refused")
