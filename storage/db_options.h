// How every SQLite file of the daemon is opened.
#pragma once

#include <string>

namespace webhooker {

// synchronous=FULL makes every commit durable across power loss: the 200 of
// an ingest means the event is on disk. NORMAL is faster and still safe
// against a process crash (WAL), not against an OS crash.
enum class SyncMode { kFull, kNormal };

struct DbOptions {
  SyncMode sync = SyncMode::kFull;
  int busyTimeoutMs = 5000;
};

}  // namespace webhooker
