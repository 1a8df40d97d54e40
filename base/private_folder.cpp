#include "base/private_folder.h"

#include <fmt/format.h>

namespace webhooker {

Result<void> ensurePrivateFolder(const std::filesystem::path& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (!ec && !fs::is_directory(folder, ec)) ec = std::make_error_code(std::errc::not_a_directory);
  if (!ec) fs::permissions(folder, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec)
    return makeError(error_code::kStorageError,
                     fmt::format("cannot make {} a private folder (0700): {}", folder.string(),
                                 ec.message()));
  return {};
}

}  // namespace webhooker
