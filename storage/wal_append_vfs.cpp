#include "storage/wal_append_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace webhooker::storage {

namespace {

constexpr const char* kAppendVfsName = "webhooker-wal-append";
// A WAL frame's header; its bytes 4..7 hold the database's size in pages
// for a transaction's commit frame, 0 for any other frame.
constexpr int kFrameHeaderBytes = 24;
// Held bytes are written once they reach this (a large commit, a
// transaction that spills): a write of 64 KB costs the kernel little more
// than one of 2 KB, and the unix VFS writes at most 128 KiB - 1 bytes a
// call (it masks the length).
constexpr size_t kMaxHeld = 64 << 10;
// What a held buffer is made with: room for kMaxHeld and one more frame of
// a page of up to 4 KB, so that it never grows (a freed large block stays
// with its thread's heap).
constexpr size_t kBufferBytes = kMaxHeld + 4096 + kFrameHeaderBytes;

// A database file or WAL opened through this VFS. `base` (what SQLite
// sees) comes first; the default VFS's own file follows in the same
// allocation.
struct File {
  sqlite3_file base;
  sqlite3_file* real;
  // A WAL: the bytes appended and not yet written, from offset heldAt, and
  // whether the last append was a commit frame's header. A database file:
  // its connection's WAL, while open.
  std::string held;
  sqlite3_int64 heldAt = 0;
  bool commitFrameNext = false;
  // A WAL: the first failed write of held bytes in the current write
  // transaction, where SQLite may not have checked it (a file control, a
  // lock), given to SQLite at the transaction's next write or flush of the
  // WAL (not a read: its rollback reads).
  int failed = SQLITE_OK;
  File* wal = nullptr;
  File* database = nullptr;  // a WAL's database file
};

// Buffers for held bytes, used again rather than allocated and freed
// around every commit on whichever thread commits (each thread's heap kept
// a spare). Keeps as many as a few commits at once hold.
class HeldBuffers {
 public:
  static HeldBuffers& shared() {
    static HeldBuffers* const buffers = new HeldBuffers;  // never destroyed: files outlive exit
    return *buffers;
  }
  std::string take() EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    if (free_.empty()) {
      std::string buffer;
      buffer.reserve(kBufferBytes);
      return buffer;
    }
    std::string buffer = std::move(free_.back());
    free_.pop_back();
    return buffer;
  }
  void giveBack(std::string buffer) EXCLUDES(mutex_) {
    if (buffer.capacity() > kBufferBytes) return;  // grown by pages over 4 KB: freed
    buffer.clear();
    MutexLock lock(mutex_);
    if (free_.size() < kMaxKept) free_.push_back(std::move(buffer));
  }

 private:
  static constexpr size_t kMaxKept = 8;
  Mutex mutex_;
  std::vector<std::string> free_ GUARDED_BY(mutex_);
};

File& fileOf(sqlite3_file* f) { return *reinterpret_cast<File*>(f); }
sqlite3_file* realOf(sqlite3_file* f) { return fileOf(f).real; }

// The default VFS of the moment, whose files this one's wrap (a test may
// make its own the default after this one is registered).
sqlite3_vfs* baseVfs() { return sqlite3_vfs_find(nullptr); }

// Writes what `wal` holds; the memory goes back, so a thousand quiet files
// keep none. An SQLite result code.
int writeHeld(File& wal) {
  if (wal.held.empty()) return SQLITE_OK;
  int rc = SQLITE_OK;
  for (size_t done = 0; done < wal.held.size() && rc == SQLITE_OK; done += kMaxHeld) {
    const size_t amount = std::min(kMaxHeld, wal.held.size() - done);
    rc = wal.real->pMethods->xWrite(wal.real, wal.held.data() + done, static_cast<int>(amount),
                                    wal.heldAt + static_cast<sqlite3_int64>(done));
  }
  HeldBuffers::shared().giveBack(std::exchange(wal.held, std::string()));
  wal.commitFrameNext = false;
  if (wal.failed == SQLITE_OK) wal.failed = rc;
  return rc;
}

// --- a WAL's methods: its appends held, everything else after them -------

int walClose(sqlite3_file* f) {
  File& wal = fileOf(f);
  const int written = writeHeld(wal);
  if (wal.database) wal.database->wal = nullptr;
  const int rc = wal.real->pMethods->xClose(wal.real);
  wal.~File();
  return written != SQLITE_OK ? written : rc;
}

int walWrite(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
  File& wal = fileOf(f);
  if (wal.failed != SQLITE_OK) return wal.failed;
  if (!wal.held.empty() && offset != wal.heldAt + static_cast<sqlite3_int64>(wal.held.size())) {
    if (const int rc = writeHeld(wal); rc != SQLITE_OK) return rc;
  }
  if (wal.held.empty()) {
    wal.held = HeldBuffers::shared().take();
    wal.heldAt = offset;
  }
  wal.held.append(static_cast<const char*>(data), static_cast<size_t>(amount));
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (amount == kFrameHeaderBytes && (bytes[4] | bytes[5] | bytes[6] | bytes[7]) != 0) {
    wal.commitFrameNext = true;  // its page comes next
    return SQLITE_OK;
  }
  if (wal.commitFrameNext || wal.held.size() >= kMaxHeld) return writeHeld(wal);
  return SQLITE_OK;
}

int walRead(sqlite3_file* f, void* data, int amount, sqlite3_int64 offset) {
  if (const int rc = writeHeld(fileOf(f)); rc != SQLITE_OK) return rc;
  return realOf(f)->pMethods->xRead(realOf(f), data, amount, offset);
}

int walTruncate(sqlite3_file* f, sqlite3_int64 size) {
  if (const int rc = writeHeld(fileOf(f)); rc != SQLITE_OK) return rc;
  return realOf(f)->pMethods->xTruncate(realOf(f), size);
}

int walSync(sqlite3_file* f, int flags) {
  File& wal = fileOf(f);
  writeHeld(wal);  // a failure is kept in wal.failed
  if (wal.failed != SQLITE_OK) return wal.failed;
  return wal.real->pMethods->xSync(wal.real, flags);
}

int walFileSize(sqlite3_file* f, sqlite3_int64* size) {
  if (const int rc = writeHeld(fileOf(f)); rc != SQLITE_OK) return rc;
  return realOf(f)->pMethods->xFileSize(realOf(f), size);
}

int walFileControl(sqlite3_file* f, int op, void* arg) {
  if (const int rc = writeHeld(fileOf(f)); rc != SQLITE_OK) return rc;
  return realOf(f)->pMethods->xFileControl(realOf(f), op, arg);
}

// --- a database file's methods: the real file's, but that the shared ------
// --- WAL index is never locked or published past held frames          ------

int databaseClose(sqlite3_file* f) {
  File& database = fileOf(f);
  if (database.wal) database.wal->database = nullptr;
  const int rc = database.real->pMethods->xClose(database.real);
  database.~File();
  return rc;
}

int databaseShmLock(sqlite3_file* f, int offset, int n, int flags) {
  File& database = fileOf(f);
  if (database.wal) {
    // Taking the WAL index's write lock (its first lock) begins a write
    // transaction: the last one's failure is behind it.
    constexpr int kWriteLock = 0;
    if (offset == kWriteLock && flags == (SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE))
      database.wal->failed = SQLITE_OK;
    const int rc = writeHeld(*database.wal);
    // Letting go cannot fail; what a rolled-back transaction held is no
    // frame anyone reads.
    if (rc != SQLITE_OK && (flags & SQLITE_SHM_LOCK) != 0) return rc;
  }
  return database.real->pMethods->xShmLock(database.real, offset, n, flags);
}

void databaseShmBarrier(sqlite3_file* f) {
  File& database = fileOf(f);
  if (database.wal) writeHeld(*database.wal);  // a commit frame wrote it already
  database.real->pMethods->xShmBarrier(database.real);
}

// --- the rest passes through ----------------------------------------------

int passRead(sqlite3_file* f, void* data, int amount, sqlite3_int64 offset) {
  return realOf(f)->pMethods->xRead(realOf(f), data, amount, offset);
}
int passWrite(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
  return realOf(f)->pMethods->xWrite(realOf(f), data, amount, offset);
}
int passTruncate(sqlite3_file* f, sqlite3_int64 size) {
  return realOf(f)->pMethods->xTruncate(realOf(f), size);
}
int passSync(sqlite3_file* f, int flags) { return realOf(f)->pMethods->xSync(realOf(f), flags); }
int passFileSize(sqlite3_file* f, sqlite3_int64* size) {
  return realOf(f)->pMethods->xFileSize(realOf(f), size);
}
int passFileControl(sqlite3_file* f, int op, void* arg) {
  return realOf(f)->pMethods->xFileControl(realOf(f), op, arg);
}
int passLock(sqlite3_file* f, int level) { return realOf(f)->pMethods->xLock(realOf(f), level); }
int passUnlock(sqlite3_file* f, int level) {
  return realOf(f)->pMethods->xUnlock(realOf(f), level);
}
int passCheckReservedLock(sqlite3_file* f, int* out) {
  return realOf(f)->pMethods->xCheckReservedLock(realOf(f), out);
}
int passSectorSize(sqlite3_file* f) { return realOf(f)->pMethods->xSectorSize(realOf(f)); }
int passDeviceCharacteristics(sqlite3_file* f) {
  return realOf(f)->pMethods->xDeviceCharacteristics(realOf(f));
}
int passShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return realOf(f)->pMethods->xShmMap(realOf(f), region, size, extend, out);
}
int passShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return realOf(f)->pMethods->xShmLock(realOf(f), offset, n, flags);
}
void passShmBarrier(sqlite3_file* f) { realOf(f)->pMethods->xShmBarrier(realOf(f)); }
int passShmUnmap(sqlite3_file* f, int deleteFlag) {
  return realOf(f)->pMethods->xShmUnmap(realOf(f), deleteFlag);
}
int passFetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
  return realOf(f)->pMethods->xFetch(realOf(f), offset, amount, out);
}
int passUnfetch(sqlite3_file* f, sqlite3_int64 offset, void* page) {
  return realOf(f)->pMethods->xUnfetch(realOf(f), offset, page);
}

// The methods of a WAL or a database file whose real file has methods of
// `version` (1 to 3): no more than it has.
const sqlite3_io_methods* methodsFor(bool wal, int version) {
  static const auto make = [](bool isWal, int v) {
    sqlite3_io_methods m{};
    m.iVersion = v;
    m.xClose = isWal ? walClose : databaseClose;
    m.xRead = isWal ? walRead : passRead;
    m.xWrite = isWal ? walWrite : passWrite;
    m.xTruncate = isWal ? walTruncate : passTruncate;
    m.xSync = isWal ? walSync : passSync;
    m.xFileSize = isWal ? walFileSize : passFileSize;
    m.xLock = passLock;
    m.xUnlock = passUnlock;
    m.xCheckReservedLock = passCheckReservedLock;
    m.xFileControl = isWal ? walFileControl : passFileControl;
    m.xSectorSize = passSectorSize;
    m.xDeviceCharacteristics = passDeviceCharacteristics;
    if (v >= 2) {
      m.xShmMap = passShmMap;
      m.xShmLock = isWal ? passShmLock : databaseShmLock;
      m.xShmBarrier = isWal ? passShmBarrier : databaseShmBarrier;
      m.xShmUnmap = passShmUnmap;
    }
    if (v >= 3) {
      m.xFetch = passFetch;
      m.xUnfetch = passUnfetch;
    }
    return m;
  };
  static const sqlite3_io_methods kMethods[2][3] = {
      {make(false, 1), make(false, 2), make(false, 3)},
      {make(true, 1), make(true, 2), make(true, 3)}};
  return &kMethods[wal ? 1 : 0][version - 1];
}

// Room for the default VFS's file: the unix VFS's, or a test's wrapping it.
int realRoom() {
  sqlite3_vfs* unix = sqlite3_vfs_find("unix");
  return 2 * (unix ? unix->szOsFile : 1024) + 256;
}

int walAppendOpen(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags,
                  int* outFlags) {
  sqlite3_vfs* base = baseVfs();
  const bool wal = (flags & SQLITE_OPEN_WAL) != 0;
  // A WAL's frames are held only where its database file is this VFS's:
  // that is where the WAL index is locked and published.
  sqlite3_file* owner = wal && name ? sqlite3_database_file_object(name) : nullptr;
  const bool ownerIsOurs = owner && owner->pMethods && owner->pMethods->xClose == databaseClose;
  const bool wrap = wal ? ownerIsOurs : (flags & SQLITE_OPEN_MAIN_DB) != 0;
  if (!wrap || base->szOsFile > vfs->szOsFile - static_cast<int>(sizeof(File))) {
    // Temporary and journal files: the default VFS's own.
    if (base->szOsFile > vfs->szOsFile) return SQLITE_CANTOPEN;
    return base->xOpen(base, name, f, flags, outFlags);
  }
  File* file = new (f) File{};
  file->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + sizeof(File));
  std::memset(file->real, 0, static_cast<size_t>(base->szOsFile));
  const int rc = base->xOpen(base, name, file->real, flags, outFlags);
  if (rc != SQLITE_OK || !file->real->pMethods) {
    // SQLite calls no xClose for a file whose pMethods is null, but the
    // real one may need its own.
    if (file->real->pMethods) file->real->pMethods->xClose(file->real);
    file->~File();
    f->pMethods = nullptr;
    return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
  }
  f->pMethods = methodsFor(wal, std::clamp(file->real->pMethods->iVersion, 1, 3));
  if (wal) {
    file->database = &fileOf(owner);
    file->database->wal = file;
  }
  return SQLITE_OK;
}

sqlite3_vfs* registerAppendVfs() {
  sqlite3_vfs* base = baseVfs();
  if (!base) return nullptr;
  static sqlite3_vfs vfs = *base;
  vfs.zName = kAppendVfsName;
  vfs.pNext = nullptr;
  vfs.szOsFile = static_cast<int>(sizeof(File)) + realRoom();
  vfs.xOpen = walAppendOpen;
  if (sqlite3_vfs_register(&vfs, 0) != SQLITE_OK) return nullptr;
  return &vfs;
}

}  // namespace

const char* walAppendVfs() {
  static sqlite3_vfs* const registered = registerAppendVfs();
  return registered ? kAppendVfsName : nullptr;
}

}  // namespace webhooker::storage
