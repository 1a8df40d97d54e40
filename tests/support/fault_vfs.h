// FaultVfs: storage faults injected at the lowest seam, SQLite's VFS. It is
// registered as the default VFS of the test process and passes every call
// to the real one (unix), except that writes to a chosen database file (and
// its -wal and -journal, unless told otherwise) fail the way the unix VFS
// reports the real fault:
//   kDiskFull  xWrite/xTruncate answer SQLITE_FULL (write() gave ENOSPC);
//   kReadOnly  xWrite/xTruncate answer SQLITE_IOERR_WRITE (EROFS: the file
//              system went read-only under an open handle), and opening for
//              writing falls back to read-only, as the unix VFS does when
//              open(O_RDWR) is refused.
// Everything above it — SQLite's rollback, SQLiteCpp, storage/, the server,
// the engine — runs unchanged. Needs no root, unlike the real faults in
// storage_faults_test.
//
// Threading: inject()/clear() may be called from any thread while SQLite
// works on others; the fault is read under a mutex on every write.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace webhooker::testing {

class FaultVfs {
 public:
  enum class Fault { kNone, kDiskFull, kReadOnly };

  // Registers the VFS as the default, once per process.
  static FaultVfs& install() {
    static FaultVfs instance;
    return instance;
  }

  // From now on, writes to the file `dbFile` (a path or its last part) fail,
  // and to its -wal and -journal too when `withCompanions`.
  void inject(std::string dbFile, Fault fault, bool withCompanions = true) {
    std::lock_guard lock(mutex_);
    dbFile_ = std::move(dbFile);
    fault_ = fault;
    withCompanions_ = withCompanions;
  }
  void clear() { inject("", Fault::kNone); }

 private:
  struct File {
    sqlite3_file base;  // first: SQLite sees a File* as a sqlite3_file*
    std::string* name;  // owned; xClose deletes it
    sqlite3_file* real;  // the unix VFS's file, allocated right after this struct
  };

  FaultVfs() {
    real_ = sqlite3_vfs_find(nullptr);
    if (!real_) throw std::runtime_error("FaultVfs: no default VFS");
    vfs_ = *real_;
    vfs_.szOsFile = static_cast<int>(sizeof(File)) + real_->szOsFile;
    vfs_.zName = "webhooker-test-faults";
    vfs_.pAppData = this;
    vfs_.xOpen = &FaultVfs::open;
    if (sqlite3_vfs_register(&vfs_, 1) != SQLITE_OK)
      throw std::runtime_error("FaultVfs: cannot register the VFS");
  }

  Fault faultFor(const std::string& name) {
    const auto endsWith = [&](const std::string& tail) {
      return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    std::lock_guard lock(mutex_);
    if (fault_ == Fault::kNone) return Fault::kNone;
    const bool hit = endsWith(dbFile_) ||
                     (withCompanions_ && (endsWith(dbFile_ + "-wal") || endsWith(dbFile_ + "-journal")));
    return hit ? fault_ : Fault::kNone;
  }
  static FaultVfs& of(sqlite3_vfs* vfs) { return *static_cast<FaultVfs*>(vfs->pAppData); }
  static File& fileOf(sqlite3_file* f) { return *reinterpret_cast<File*>(f); }
  static int writeFault(sqlite3_file* f) {
    switch (install().faultFor(*fileOf(f).name)) {
      case Fault::kDiskFull: return SQLITE_FULL;
      case Fault::kReadOnly: return SQLITE_IOERR_WRITE;
      case Fault::kNone: break;
    }
    return SQLITE_OK;
  }

  static int open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags,
                  int* outFlags) {
    FaultVfs& self = of(vfs);
    File& file = fileOf(f);
    file.base.pMethods = nullptr;  // until the real open succeeded
    file.real = reinterpret_cast<sqlite3_file*>(&file + 1);
    const std::string fileName = name ? name : "";
    if ((flags & SQLITE_OPEN_READWRITE) && self.faultFor(fileName) == Fault::kReadOnly)
      flags = (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_READONLY;
    const int rc = self.real_->xOpen(self.real_, name, file.real, flags, outFlags);
    if (rc != SQLITE_OK) return rc;
    file.name = new std::string(fileName);
    file.base.pMethods = methodsFor(file.real->pMethods->iVersion);
    return SQLITE_OK;
  }

  static const sqlite3_io_methods* methodsFor(int version) {
    static sqlite3_io_methods methods[4];
    static std::once_flag once;
    std::call_once(once, [] {
      for (int v = 1; v <= 3; ++v) methods[v] = makeMethods(v);
    });
    return &methods[std::clamp(version, 1, 3)];
  }

  static sqlite3_io_methods makeMethods(int version) {
    sqlite3_io_methods m{};
    m.iVersion = version;
    m.xClose = [](sqlite3_file* f) {
      File& file = fileOf(f);
      const int rc = file.real->pMethods->xClose(file.real);
      delete file.name;
      return rc;
    };
    m.xRead = [](sqlite3_file* f, void* b, int n, sqlite3_int64 o) {
      return real(f)->pMethods->xRead(real(f), b, n, o);
    };
    m.xWrite = [](sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
      if (int rc = writeFault(f)) return rc;
      return real(f)->pMethods->xWrite(real(f), b, n, o);
    };
    m.xTruncate = [](sqlite3_file* f, sqlite3_int64 size) {
      if (int rc = writeFault(f)) return rc;
      return real(f)->pMethods->xTruncate(real(f), size);
    };
    m.xSync = [](sqlite3_file* f, int flags) { return real(f)->pMethods->xSync(real(f), flags); };
    m.xFileSize = [](sqlite3_file* f, sqlite3_int64* size) {
      return real(f)->pMethods->xFileSize(real(f), size);
    };
    m.xLock = [](sqlite3_file* f, int l) { return real(f)->pMethods->xLock(real(f), l); };
    m.xUnlock = [](sqlite3_file* f, int l) { return real(f)->pMethods->xUnlock(real(f), l); };
    m.xCheckReservedLock = [](sqlite3_file* f, int* out) {
      return real(f)->pMethods->xCheckReservedLock(real(f), out);
    };
    m.xFileControl = [](sqlite3_file* f, int op, void* arg) {
      return real(f)->pMethods->xFileControl(real(f), op, arg);
    };
    m.xSectorSize = [](sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); };
    m.xDeviceCharacteristics = [](sqlite3_file* f) {
      return real(f)->pMethods->xDeviceCharacteristics(real(f));
    };
    if (version >= 2) {
      m.xShmMap = [](sqlite3_file* f, int page, int size, int extend, void volatile** out) {
        return real(f)->pMethods->xShmMap(real(f), page, size, extend, out);
      };
      m.xShmLock = [](sqlite3_file* f, int offset, int n, int flags) {
        return real(f)->pMethods->xShmLock(real(f), offset, n, flags);
      };
      m.xShmBarrier = [](sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); };
      m.xShmUnmap = [](sqlite3_file* f, int del) {
        return real(f)->pMethods->xShmUnmap(real(f), del);
      };
    }
    if (version >= 3) {
      m.xFetch = [](sqlite3_file* f, sqlite3_int64 o, int n, void** p) {
        return real(f)->pMethods->xFetch(real(f), o, n, p);
      };
      m.xUnfetch = [](sqlite3_file* f, sqlite3_int64 o, void* p) {
        return real(f)->pMethods->xUnfetch(real(f), o, p);
      };
    }
    return m;
  }
  static sqlite3_file* real(sqlite3_file* f) { return fileOf(f).real; }

  sqlite3_vfs* real_ = nullptr;
  sqlite3_vfs vfs_{};
  std::mutex mutex_;  // guards dbFile_, fault_ and withCompanions_
  std::string dbFile_;
  Fault fault_ = Fault::kNone;
  bool withCompanions_ = true;
};

}  // namespace webhooker::testing
