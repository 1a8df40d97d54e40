// Internal to storage/: the VFS openAlone() reads through. It is SQLite's
// default VFS but for one thing: the WAL of a file that has none on disk,
// or an empty one, is an empty file in memory, which refuses every write,
// instead of a file made (or opened) on disk for the read. Creating and
// deleting that file was most of the CPU of reading a quiet events DB alone
// (ext4 looks for a free inode on every create), and a pass over every
// file (recovery, the sweep, retention) reads thousands.
//
// Safe only where the connection holds the database file in exclusive
// locking mode before its first read (openAlone does): its WAL index is in
// its own memory, no other connection can open the file while it does, so
// nobody writes a WAL beside the one it pretends is empty. A WAL with
// frames on disk is opened as SQLite would.
#pragma once

namespace webhooker::storage {

// The VFS's name, registered (not as the default) on the first call.
// After the library's configuration (configureLibraryOnce): registering
// initialises SQLite.
const char* readAloneVfs();

}  // namespace webhooker::storage
