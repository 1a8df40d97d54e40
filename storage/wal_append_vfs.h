// Internal to storage/: the VFS the daemon's databases are written through.
// It is SQLite's default VFS but for one thing: the frames a transaction
// appends to its WAL reach the file in as few writes as the frames' bytes
// allow, not two per page. SQLite writes each frame's 24-byte header and its
// page with a write() each, so a commit of ten 2 KB pages to a quiet events
// DB made twenty system calls; a kernel write costs about the same for 24
// bytes as for 20 KB.
//
// What is appended to a WAL is held in memory, in order, and written at the
// latest when the transaction's commit frame (the one naming the database's
// size) has been appended: before SQLite makes the commit visible in the WAL
// index or flushes the WAL, and inside the write that SQLite checks, so a
// failed write is the commit's error. It is also written before anything
// else touches the WAL (a read, a write elsewhere in it, its size, a flush,
// a truncation, its close), and before the connection's database file takes
// or lets go of a lock in the WAL index: frames a transaction that rolled
// back left unwritten can never land on another writer's frames. Where a
// write of held frames fails unchecked (inside a file control, say), the
// transaction's next write or flush of the WAL fails with it, so its commit
// does too.
#pragma once

namespace webhooker::storage {

// The VFS's name, registered (not as the default) on the first call.
// After the library's configuration (configureLibraryOnce): registering
// initialises SQLite. nullptr if it cannot be (no default VFS).
const char* walAppendVfs();

}  // namespace webhooker::storage
