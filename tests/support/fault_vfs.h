// FaultVfs: storage faults injected at the lowest seam, SQLite's VFS. It is
// registered as the default VFS of the test process and passes every call
// to the real one (unix), except that writes to a chosen database file (and
// its -wal and -journal, unless told otherwise) fail the way the unix VFS
// reports the real fault, or its flushes wait:
//   kDiskFull  xWrite/xTruncate answer SQLITE_FULL (write() gave ENOSPC);
//   kReadOnly  xWrite/xTruncate answer SQLITE_IOERR_WRITE (EROFS: the file
//              system went read-only under an open handle), and opening for
//              writing falls back to read-only, as the unix VFS does when
//              open(O_RDWR) is refused;
//   kStall     xSync waits until the fault is cleared (a disk that takes its
//              time to flush): a commit under synchronous=FULL stops with
//              its frames written, not yet visible, its connection held;
//   kSyncFails xSync answers SQLITE_IOERR_FSYNC (fsync() gave EIO: the disk
//              could not write back what the file holds).
// Everything above it — SQLite's rollback, SQLiteCpp, storage/, the server,
// the engine — runs unchanged. Needs no root, unlike the real faults in
// storage_faults_test.
//
// Threading: inject()/clear() may be called from any thread while SQLite
// works on others; the fault is read under a mutex on every write.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace webhooker::testing {

class FaultVfs {
 public:
  enum class Fault { kNone, kDiskFull, kReadOnly, kStall, kSyncFails };

  // Registers the VFS as the default, once per process.
  static FaultVfs& install();

  // From now on, writes to the file `dbFile` (a path or its last part) fail,
  // and to its -wal and -journal too when `withCompanions`.
  void inject(std::string dbFile, Fault fault, bool withCompanions = true);
  void clear() { inject("", Fault::kNone); }
  // Whether an xSync waits in kStall within `timeout`.
  bool waitForStalledSync(std::chrono::milliseconds timeout);
  // How many xSync calls (flushes asked of the disk) files whose path ends
  // with `tail` have had in this process, faulty or not.
  int syncsOf(const std::string& tail);
  // How many writes (xWrite and xTruncate calls) such files have had.
  int writesOf(const std::string& tail);

 private:
  FaultVfs();

  Fault faultFor(const std::string& name);
  static int writeFault(sqlite3_file* f);
  // xSync's part: returns once `f` is not stalled.
  void waitWhileStalled(sqlite3_file* f);
  static int open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags,
                  int* outFlags);
  // The I/O methods of a file: the real file's, but for writes, truncates
  // and syncs.
  static const sqlite3_io_methods* methodsFor(int version);
  static sqlite3_io_methods makeMethods(int version);

  sqlite3_vfs* real_ = nullptr;
  sqlite3_vfs vfs_{};
  std::mutex mutex_;  // guards the members below
  std::string dbFile_;
  Fault fault_ = Fault::kNone;
  bool withCompanions_ = true;
  int stalledSyncs_ = 0;
  std::map<std::string, int> syncs_;  // by file path
  std::map<std::string, int> writes_;  // by file path
  std::condition_variable changed_;  // fault_ or stalledSyncs_
};

}  // namespace webhooker::testing
