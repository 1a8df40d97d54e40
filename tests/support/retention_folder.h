// RetentionFolder: a data folder as the daemon has it (the main DB and the
// pool of events DBs, on a fake clock) with the retention pass over it, for
// the tests of what that pass does to stored events.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <utility>

#include "engine/retention_pruner.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "tests/support/fake_clock.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {

struct RetentionFolder {
  TempDir dir;
  FakeClock clock;
  std::unique_ptr<MainStore> store;
  EventsDbPool pool{dir.path(), DbOptions{}, clock};
  RetentionPruner pruner;

  RetentionFolder() : store(openStore()), pruner(*store, pool) {}

  std::unique_ptr<MainStore> openStore() {
    auto s = MainStore::open(dir / "webhooker.db", DbOptions{}, clock);
    REQUIRE(s.ok());
    return std::move(s.value());
  }

  // One pass, which must not have failed on any file.
  RetentionPruner::PassStats pass() {
    auto stats = pruner.runOnce();
    REQUIRE(stats.ok());
    CHECK(stats->failures == 0);
    return stats.value();
  }
};

}  // namespace webhooker::testing
