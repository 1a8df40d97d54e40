// Moving a webhook's events DB to another node in pieces, while the source
// keeps taking events (docs/scaling.md, *Moving a webhook*).
//
// A piece is a small SQLite file: the events after a watermark (in rowid
// order, up to a byte budget of bodies, at least one), the deliveries of
// those events and, on a catch-up, every delivery changed since the copy
// began, and the attempts of those deliveries (an attempt changes its
// delivery's updated_at). The target merges pieces into its copy:
// events and attempts are kept if already there (their ids are the
// source's), a delivery as DeliveryMerge says, so merging a piece twice, or
// an old piece after a newer one, changes nothing.
//
// Both files must have the same schema version ("schema_mismatch"
// otherwise: run the same binary on both nodes). Errors: "storage_error"/
// "storage_busy" from SQLite; nothing is merged then.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "base/result.h"
#include "storage/db_options.h"

namespace webhooker {

class EventsDbPool;

struct TransferCursor {
  int64_t afterEvent = 0;  // rowid of the last event copied
  // A catch-up: also every delivery changed at or after this time (of the
  // events up to the piece's last).
  std::optional<std::string> changedSince;
};

struct TransferPiece {
  std::string bytes;       // the SQLite file
  int64_t lastEvent = 0;   // the cursor's next afterEvent
  bool more = false;       // events are left after lastEvent
  std::string sourceTime;  // the source's clock when the piece was read
};

// Reads one piece of `eventsDb` (a second connection beside the daemon's),
// using `scratch` (a folder of the same file system) for the file. A missing
// `eventsDb` (a webhook with no event yet, or one deleted meanwhile) reads as
// an empty one, and is not made.
Result<TransferPiece> readTransferPiece(const std::filesystem::path& eventsDb,
                                        const std::filesystem::path& scratch,
                                        const TransferCursor& cursor, size_t bodyBudget,
                                        const DbOptions& options, const std::string& now);

// How a piece's deliveries meet the copy's.
enum class DeliveryMerge {
  // The incoming copy: a delivery the source changed since replaces it.
  kNewerWins,
  // A file that delivers already: only deliveries it lacks are added, so
  // nothing it did is ever undone (whatever the two nodes' clocks say).
  kAddMissing,
};

// Merges a piece into `eventsDb`, created with the events schema if missing:
// a file no EventsDbPool knows (an incoming copy).
Result<void> mergeTransferPiece(const std::filesystem::path& eventsDb,
                                const std::filesystem::path& scratch, const std::string& bytes,
                                DeliveryMerge deliveries, const DbOptions& options);
// Merges a piece into the events DB of `webhookId` (a webhook that took over
// already: a late piece of a resumed move) on the connection `pool` writes
// it with, so the file has one writer, and the pool makes it, as a first
// write does, if the webhook has none yet. "not_found" when the pool
// refuses the id (the webhook was deleted); nothing is made then.
Result<void> mergeTransferPiece(EventsDbPool& pool, const std::string& webhookId,
                                const std::string& bytes, DeliveryMerge deliveries);

// Makes a merged copy `incoming` the file `eventsDb`: its WAL written back
// into it first (a copy's WAL would not follow a rename), a WAL and WAL
// index left under `eventsDb` deleted, then renamed. No connection to
// `eventsDb` may be open (EventsDbPool::install sees to it).
Result<void> adoptIncoming(const std::filesystem::path& incoming,
                           const std::filesystem::path& eventsDb, const DbOptions& options);

}  // namespace webhooker
