// How every SQLite file of the daemon is opened.
#pragma once

#include <string>

namespace webhooker {

// synchronous=FULL makes every commit durable across power loss: the 200 of
// an ingest means the event is on disk. NORMAL is faster and still safe
// against a process crash (WAL), not against an OS crash.
enum class SyncMode { kFull, kNormal };

// Under kFull, what a commit round over many files flushes: the node's
// commit journal once (kJournal, see storage/commit_journal.h), each file's
// WAL (kFile), or the data folder's file system once (kFileSystem, for a
// data folder on a file system of its own; see storage/file_system_flush.h).
enum class FlushScope { kJournal, kFile, kFileSystem };

struct DbOptions {
  SyncMode sync = SyncMode::kFull;
  FlushScope flushScope = FlushScope::kJournal;
  int busyTimeoutMs = 5000;
  // Bytes per page of a file made new (0: SQLite's default, 4,096); a file
  // keeps the page size it was made with.
  int pageSize = 0;
};

}  // namespace webhooker
