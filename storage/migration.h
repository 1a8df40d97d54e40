// A numbered schema change. The SQL lives in migrations/<set>/NNNN_name.sql
// and is embedded at build time (scripts/embed.py).
#pragma once

#include <span>
#include <string_view>

namespace webhooker {

struct Migration {
  int version;
  std::string_view name;
  std::string_view sql;
};

// The embedded migration sets, ordered by version, numbered 1..N.
std::span<const Migration> mainMigrations();
std::span<const Migration> eventsMigrations();

}  // namespace webhooker
