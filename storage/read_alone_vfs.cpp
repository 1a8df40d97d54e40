#include "storage/read_alone_vfs.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace webhooker::storage {

namespace {

constexpr const char* kName = "webhooker-read-alone";

sqlite3_vfs* defaultVfs = nullptr;  // set before the VFS is registered, never changed

// The WAL that is not there: empty, and it stays empty. A write (none is
// made by a connection that only reads) fails rather than vanish.
int emptyClose(sqlite3_file*) { return SQLITE_OK; }
int emptyRead(sqlite3_file*, void* buffer, int amount, sqlite3_int64) {
  std::memset(buffer, 0, static_cast<size_t>(amount));
  return SQLITE_IOERR_SHORT_READ;
}
int emptyWrite(sqlite3_file*, const void*, int, sqlite3_int64) { return SQLITE_IOERR_WRITE; }
int emptyTruncate(sqlite3_file*, sqlite3_int64 size) {
  return size == 0 ? SQLITE_OK : SQLITE_IOERR_TRUNCATE;
}
int emptySync(sqlite3_file*, int) { return SQLITE_OK; }
int emptyFileSize(sqlite3_file*, sqlite3_int64* size) {
  *size = 0;
  return SQLITE_OK;
}
int emptyLock(sqlite3_file*, int) { return SQLITE_OK; }
int emptyCheckReservedLock(sqlite3_file*, int* reserved) {
  *reserved = 0;
  return SQLITE_OK;
}
int emptyFileControl(sqlite3_file*, int, void*) { return SQLITE_NOTFOUND; }
int emptySectorSize(sqlite3_file*) { return 4096; }
int emptyDeviceCharacteristics(sqlite3_file*) { return 0; }

const sqlite3_io_methods kEmptyWal = {
    1,  // iVersion: no shared memory, none is asked of a WAL file
    emptyClose,     emptyRead, emptyWrite, emptyTruncate, emptySync, emptyFileSize,
    emptyLock,      emptyLock, emptyCheckReservedLock, emptyFileControl, emptySectorSize,
    emptyDeviceCharacteristics,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};

int readAloneOpen(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* file, int flags,
                  int* outFlags) {
  if ((flags & SQLITE_OPEN_WAL) != 0 && name != nullptr) {
    struct stat st {};
    const bool none = ::stat(name, &st) != 0 && errno == ENOENT;
    if (none || (S_ISREG(st.st_mode) && st.st_size == 0)) {
      file->pMethods = &kEmptyWal;
      if (outFlags) *outFlags = flags;
      return SQLITE_OK;
    }
  }
  return defaultVfs->xOpen(defaultVfs, name, file, flags, outFlags);
}

sqlite3_vfs* makeVfs() {
  defaultVfs = sqlite3_vfs_find(nullptr);
  if (!defaultVfs) return nullptr;
  // Everything else is the default VFS's, its pAppData (the unix VFS finds
  // its locking style there) included.
  static sqlite3_vfs vfs = *defaultVfs;
  vfs.zName = kName;
  vfs.pNext = nullptr;
  vfs.xOpen = readAloneOpen;
  if (sqlite3_vfs_register(&vfs, 0) != SQLITE_OK) return nullptr;
  return &vfs;
}

}  // namespace

const char* readAloneVfs() {
  static sqlite3_vfs* const registered = makeVfs();
  // Without it (no default VFS: not a build this daemon runs on) the read
  // goes through the default VFS, making and deleting the WAL as before.
  return registered ? kName : nullptr;
}

}  // namespace webhooker::storage
