"""What `make run` installs: the packages of the install-deps calls `make -n
run` would make hold none of the test toolchain (no browser, fuzzing
compiler, packaging tools, and no package that starts a service and takes
a port), and it never runs npm; the lists do not repeat a package; the
README's receiver takes no port that a listed service, or the daemon, does."""
import os
import pathlib
import re

from support import run

source = pathlib.Path(os.environ["WEBHOOKER_SOURCE_DIR"])

# Test-only by nature, named here rather than read from the lists, so that
# moving one into the build list fails this test.
TEST_ONLY = {"doctest-dev", "prometheus", "chromium", "nodejs", "npm", "clang",
             "libclang-rt-14-dev", "nginx-light", "nginx", "haproxy", "lintian", "debhelper",
             "redis-server", "nats-server", "rabbitmq-server"}
# The ports the listed services take once installed, and the daemon's own.
TAKEN_PORTS = {9090: "prometheus", 80: "nginx-light", 8080: "webhooker's default",
               6379: "redis-server", 5672: "rabbitmq-server", 4222: "nats-server"}


def install_deps_calls(target):
    """The argument lists of the install-deps calls of `make -n TARGET`."""
    dry = run(["make", "-n", "-C", str(source), target, "DATA_DIR=/nonexistent"]).stdout
    assert "npm" not in dry, f"make {target} runs npm:\n{dry}"
    calls = re.findall(r"scripts/install-deps[ \t]*([^\n;&|]*)", dry)
    assert calls, f"make {target} installs nothing?\n{dry}"
    return [call.split() for call in calls]


def packages(*args):
    listed = run(["bash", str(source / "scripts" / "install-deps"), "--list", *args]).stdout
    return listed.split()


for target, allowed in (("run", set()), ("deb", {"lintian", "debhelper"})):
    for call in install_deps_calls(target):
        found = (set(packages(*call)) & TEST_ONLY) - allowed
        assert not found, f"make {target} installs test-only packages: {sorted(found)}"

everything = packages("test")
repeated = {p for p in everything if everything.count(p) > 1}
assert not repeated, f"listed twice: {sorted(repeated)}"

readme = (source / "README.md").read_text()
receiver = re.search(r'HTTPServer\(\("127\.0\.0\.1", (\d+)\)', readme)
assert receiver, "the README's receiver is gone"
port = int(receiver.group(1))
assert port not in TAKEN_PORTS, f"the README's receiver port {port} is taken by {TAKEN_PORTS[port]}"
print(f"make run installs {len(packages('build'))} packages; the README's receiver uses :{port}")
