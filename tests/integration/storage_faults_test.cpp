// Storage faults on real file systems, against the real binary: an events DB
// the daemon cannot write to (an immutable file) and a full disk (a
// size-limited tmpfs). Ingest must answer 503 with a JSON error and store
// nothing, other webhooks and the rest of the daemon keep working, and all of
// it recovers once the fault clears — including deliveries whose result could
// not be written.
//
// Both faults need root (FS_IOC_SETFLAGS, mount(2)), as CI has; run as
// another user the test reports itself skipped (exit 77). The same faults
// are also injected below SQLite by storage_vfs_faults_test, which runs
// anywhere.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <thread>

#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/receiver.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_server.h"

namespace webhooker::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

void skipUnlessRoot() {
  if (::geteuid() == 0) return;
  std::cerr << "storage_faults: needs root for mount(2) and chattr; skipped\n";
  std::exit(77);  // meson's "skipped"
}

// Sets or clears the immutable attribute (chattr +i): even root cannot open
// the file for writing while it is set.
void setImmutable(const fs::path& file, bool on) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  int flags = 0;
  if (fd.get() < 0 || ::ioctl(fd.get(), FS_IOC_GETFLAGS, &flags) != 0)
    throw std::runtime_error("FS_IOC_GETFLAGS " + file.string() + ": " + std::strerror(errno));
  flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
  if (::ioctl(fd.get(), FS_IOC_SETFLAGS, &flags) != 0)
    throw std::runtime_error("FS_IOC_SETFLAGS " + file.string() + ": " + std::strerror(errno));
}

// The attribute for as long as it lives (a file left immutable could not be
// removed with its temp folder).
class ImmutableFile {
 public:
  explicit ImmutableFile(fs::path file) : file_(std::move(file)) { setImmutable(file_, true); }
  ~ImmutableFile() { release(); }
  ImmutableFile(const ImmutableFile&) = delete;
  ImmutableFile& operator=(const ImmutableFile&) = delete;
  void release() {
    if (held_) setImmutable(file_, false);
    held_ = false;
  }

 private:
  fs::path file_;
  bool held_ = true;
};

// A tmpfs of `size` mounted on `dir` for as long as it lives.
class TmpfsMount {
 public:
  TmpfsMount(fs::path dir, const std::string& size) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    const std::string options = "size=" + size + ",mode=0700";
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, options.c_str()) != 0)
      throw std::runtime_error("mount tmpfs on " + dir_.string() + ": " + std::strerror(errno));
  }
  ~TmpfsMount() { ::umount2(dir_.c_str(), MNT_DETACH); }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

 private:
  fs::path dir_;
};

// Writes zeros to `file` until the file system is full.
void fillDisk(const fs::path& file) {
  Fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  REQUIRE(fd.get() >= 0);
  const std::string block(64 * 1024, '\0');
  for (;;) {
    const ssize_t n = ::write(fd.get(), block.data(), block.size());
    if (n < 0 && errno == ENOSPC) break;
    REQUIRE(n >= 0);
  }
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

fs::path eventsDb(const fs::path& dataDir, const json& webhook) {
  return dataDir / ("events-" + webhook["id"].get<std::string>() + ".db");
}

httplib::Result postEvent(const DaemonApi& api, const json& webhook, const std::string& body) {
  return api.sender().Post(DaemonApi::hookPath(webhook), body, "application/json");
}

DaemonOptions daemonOptions() {
  DaemonOptions options;
  // A short sweep, so deliveries whose result could not be written come back quickly.
  options.args = {"--allow-networks", "127.0.0.0/8", "--sweep-interval-ms", "200"};
  options.env = {DaemonApi::adminTokenEnv()};
  return options;
}

const json kDatabaseTarget = {{"name", "archive"}, {"type", "database"}, {"config", json::object()}};

}  // namespace

TEST_CASE("an events DB that cannot be opened for writing answers 503 until it can") {
  skipUnlessRoot();
  TempDir dir;
  json shop, other;
  {
    DaemonProcess daemon(dir.path(), daemonOptions());
    DaemonApi api(daemon.url());
    shop = api.createWebhook("shop");
    other = api.createWebhook("other");
    api.createTarget(shop["id"], kDatabaseTarget);
    api.createTarget(other["id"], kDatabaseTarget);
    REQUIRE(statusOf(postEvent(api, shop, R"({"n": 1})")) == 200);
    REQUIRE(daemon.stop() == 0);
  }

  // The file is opened when the daemon starts (recovery) and when it is
  // reopened later, e.g. after the pool evicted it.
  ImmutableFile readOnly(eventsDb(dir.path(), shop));
  DaemonProcess daemon(dir.path(), daemonOptions());
  DaemonApi api(daemon.url());

  const auto refused = postEvent(api, shop, R"({"n": 2})");
  CHECK(statusOf(refused) == 503);
  CHECK(errorCode(refused) == "storage_unavailable");
  CHECK(statusOf(postEvent(api, other, R"({"n": 3})")) == 200);  // other webhooks go on
  CHECK(statusOf(api.sender().Get("/healthz")) == 200);
  const std::string history = "/api/v1/webhooks/" + shop["id"].get<std::string>() + "/events";
  const auto unreadable = api.admin().Get(history);
  CHECK(statusOf(unreadable) == 503);
  CHECK(errorCode(unreadable) == "storage_readonly");

  readOnly.release();
  CHECK(statusOf(postEvent(api, shop, R"({"n": 4})")) == 200);  // no handle stays broken
  CHECK(statusOf(api.admin().Get(history)) == 200);
  CHECK(countRows(eventsDb(dir.path(), shop), "events") == 2);   // #1 and #4
  CHECK(countRows(eventsDb(dir.path(), shop), "events", "CAST(body AS TEXT) = '{\"n\": 2}'") == 0);
  CHECK(eventually(
      [&] { return countRows(eventsDb(dir.path(), shop), "deliveries", "status = 'delivered'") == 2; },
      std::chrono::seconds(10)));
}

TEST_CASE("a full disk answers 503, keeps the daemon up and loses no delivery") {
  skipUnlessRoot();
  TempDir dir;
  const fs::path dataDir = dir / "data";
  TmpfsMount disk(dataDir, "8m");
  Receiver receiver;
  DaemonProcess daemon(dataDir, daemonOptions());
  DaemonApi api(daemon.url());
  const json shop = api.createWebhook("shop");
  api.createTarget(shop["id"], {{"name", "orders"},
                                {"type", "http"},
                                {"config", {{"url", receiver.url("/orders")}}},
                                {"retry", {{"max_retries", 3}, {"base_delay_ms", 100}}}});

  // The receiver takes the first event while the disk fills up, so its
  // answer cannot be written: the delivery must come back, not vanish.
  receiver.push(respondAfter(std::chrono::milliseconds(1500), 200));
  REQUIRE(statusOf(postEvent(api, shop, R"({"n": 1})")) == 200);
  REQUIRE(receiver.waitForRequests(1, std::chrono::seconds(5)));
  fillDisk(dataDir / "filler");

  const auto refused = postEvent(api, shop, R"({"n": 2})");
  CHECK(statusOf(refused) == 503);
  CHECK(errorCode(refused) == "storage_unavailable");
  CHECK(statusOf(api.sender().Get("/healthz")) == 200);
  CHECK(statusOf(api.admin().Get("/api/v1/webhooks")) == 200);  // reads still work
  // The answer came and was lost: the sweep (200 ms) sends the delivery again.
  REQUIRE(receiver.waitForRequests(2, std::chrono::seconds(10)));
  CHECK(countRows(eventsDb(dataDir, shop), "delivery_results") == 0);

  fs::remove(dataDir / "filler");
  CHECK(statusOf(postEvent(api, shop, R"({"n": 3})")) == 200);
  CHECK(eventually(
      [&] { return countRows(eventsDb(dataDir, shop), "deliveries", "status = 'delivered'") == 2; },
      std::chrono::seconds(10)));
  CHECK(countRows(eventsDb(dataDir, shop), "events") == 2);
  // Event 1 reached the receiver twice (at least once), event 2 never.
  int firstEvent = 0;
  for (const ReceivedRequest& r : receiver.requests()) {
    CHECK(r.body != R"({"n": 2})");
    firstEvent += r.body == R"({"n": 1})";
  }
  CHECK(firstEvent >= 2);
  CHECK(daemon.stop() == 0);
}

}  // namespace webhooker::testing
