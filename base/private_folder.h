// A folder only its owner may enter: the data folder and backups hold every
// tenant's events and every target credential.
// Pure function, any thread.
#pragma once

#include <filesystem>

#include "base/result.h"

namespace webhooker {

// Creates `folder` (and missing parents) or takes the existing one, and sets
// its mode to 0700, so one created by hand with 0755 is tightened too.
// "storage_error" naming the folder when it cannot be created or changed
// (not a folder, or not ours to chmod).
Result<void> ensurePrivateFolder(const std::filesystem::path& folder);

}  // namespace webhooker
