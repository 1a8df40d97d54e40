// EventsDbPool: the open events databases, least recently used first out,
// so 10,000 webhooks do not hold 30,000 file descriptors (db, -wal, -shm).
//
// Ownership: the pool holds one shared_ptr per open file; a caller that got
// one keeps the file open while it uses it, even if the pool evicts it.
// Threading: any thread; the map and list are guarded by poolMutex_.
#pragma once

#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"
#include "storage/db_options.h"
#include "storage/events_db.h"

namespace webhooker {

class EventsDbPool {
 public:
  static constexpr size_t kDefaultCapacity = 256;

  EventsDbPool(std::filesystem::path dataDir, DbOptions options, const Clock& clock,
               size_t capacity = kDefaultCapacity);

  // The events DB of `webhookId`, opened (created and migrated if missing).
  // "not_found" for a webhook removed since the pool was made.
  Result<std::shared_ptr<EventsDb>> get(const std::string& webhookId);

  // Closes the webhook's DB (once its users let go) and deletes its files.
  // From then on get() refuses the id, so a late delivery or pass cannot
  // bring back an empty file; a holder of the DB writes to the unlinked file
  // until it lets go. Webhook ids are never reused, so the refusal lasts.
  Result<void> remove(const std::string& webhookId);

  // What a pass over every webhook (the backlog sampler) may look at without
  // opening files or changing which DBs stay open: the DB if it is open now
  // (its place in the LRU untouched), else how many times the pool has
  // closed it. A DB the pool holds closed is not written by this process, so
  // what was read from its file stays true while `closings` does not move.
  struct Peek {
    std::shared_ptr<EventsDb> open;  // null when closed
    uint64_t closings = 0;
  };
  Peek peek(const std::string& webhookId) const;

  std::filesystem::path pathFor(const std::string& webhookId) const;
  size_t openCount() const;

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<EventsDb>>>;

  const std::filesystem::path dataDir_;
  const DbOptions options_;
  const Clock& clock_;
  const size_t capacity_;

  mutable Mutex poolMutex_;
  Lru lru_ GUARDED_BY(poolMutex_);  // front: most recently used
  std::unordered_map<std::string, Lru::iterator> index_ GUARDED_BY(poolMutex_);
  // Webhook ids whose files remove() deleted.
  std::unordered_set<std::string> removed_ GUARDED_BY(poolMutex_);
  // Evictions and removals per id.
  std::unordered_map<std::string, uint64_t> closings_ GUARDED_BY(poolMutex_);
};

}  // namespace webhooker
