#include "tests/support/fault_vfs.h"

#include <algorithm>
#include <stdexcept>

namespace webhooker::testing {

namespace {

struct File {
  sqlite3_file base;  // first: SQLite sees a File* as a sqlite3_file*
  std::string* name;  // owned; xClose deletes it
  sqlite3_file* real;  // the unix VFS's file, allocated right after this struct
};

File& fileOf(sqlite3_file* f) { return *reinterpret_cast<File*>(f); }
sqlite3_file* real(sqlite3_file* f) { return fileOf(f).real; }

}  // namespace

FaultVfs& FaultVfs::install() {
  static FaultVfs instance;
  return instance;
}

void FaultVfs::inject(std::string dbFile, Fault fault, bool withCompanions) {
  {
    std::lock_guard lock(mutex_);
    dbFile_ = std::move(dbFile);
    fault_ = fault;
    withCompanions_ = withCompanions;
  }
  changed_.notify_all();
}

bool FaultVfs::waitForStalledSync(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return stalledSyncs_ > 0; });
}

namespace {

int countOf(const std::map<std::string, int>& counts, const std::string& tail) {
  int total = 0;
  for (const auto& [name, count] : counts)
    if (name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0)
      total += count;
  return total;
}

}  // namespace

int FaultVfs::syncsOf(const std::string& tail) {
  std::lock_guard lock(mutex_);
  return countOf(syncs_, tail);
}

int FaultVfs::writesOf(const std::string& tail) {
  std::lock_guard lock(mutex_);
  return countOf(writes_, tail);
}

void FaultVfs::waitWhileStalled(sqlite3_file* f) {
  {
    std::lock_guard lock(mutex_);
    ++syncs_[*fileOf(f).name];
  }
  if (faultFor(*fileOf(f).name) != Fault::kStall) return;
  {
    std::lock_guard lock(mutex_);
    ++stalledSyncs_;
  }
  changed_.notify_all();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return fault_ != Fault::kStall; });
  --stalledSyncs_;
}

FaultVfs::FaultVfs() {
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


FaultVfs::Fault FaultVfs::faultFor(const std::string& name) {
  const auto endsWith = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  std::lock_guard lock(mutex_);
  if (fault_ == Fault::kNone) return Fault::kNone;
  const bool hit = endsWith(dbFile_) ||
                   (withCompanions_ && (endsWith(dbFile_ + "-wal") || endsWith(dbFile_ + "-journal")));
  return hit ? fault_ : Fault::kNone;
}

int FaultVfs::writeFault(sqlite3_file* f) {
  FaultVfs& self = install();
  {
    std::lock_guard lock(self.mutex_);
    ++self.writes_[*fileOf(f).name];
  }
  switch (self.faultFor(*fileOf(f).name)) {
    case Fault::kDiskFull: return SQLITE_FULL;
    case Fault::kReadOnly: return SQLITE_IOERR_WRITE;
    case Fault::kStall:
    case Fault::kSyncFails:
    case Fault::kNone: break;
  }
  return SQLITE_OK;
}


int FaultVfs::open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags,
                    int* outFlags) {
  FaultVfs& self = *static_cast<FaultVfs*>(vfs->pAppData);
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


const sqlite3_io_methods* FaultVfs::methodsFor(int version) {
  static sqlite3_io_methods methods[4];
  static std::once_flag once;
  std::call_once(once, [] {
    for (int v = 1; v <= 3; ++v) methods[v] = makeMethods(v);
  });
  return &methods[std::clamp(version, 1, 3)];
}


sqlite3_io_methods FaultVfs::makeMethods(int version) {
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
  m.xSync = [](sqlite3_file* f, int flags) {
    install().waitWhileStalled(f);  // counts the flush, waits in kStall
    if (install().faultFor(*fileOf(f).name) == Fault::kSyncFails) return SQLITE_IOERR_FSYNC;
    return real(f)->pMethods->xSync(real(f), flags);
  };
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

}  // namespace webhooker::testing
