// Where a newly generated admin token goes. Logs are collected and kept
// (journald, files, log shippers), so the token is never printed on a stream
// that may be one: it is printed only when standard output or standard
// error is an interactive terminal, and otherwise written once to
// <data>/admin-token.txt (0600, created with O_EXCL, never through a symlink)
// whose path alone is logged.
//
// Called once, on the main thread, before the daemon serves.
#pragma once

#include <filesystem>
#include <string>

namespace webhooker::app {

inline constexpr const char* kAdminTokenFile = "admin-token.txt";

// Prints or writes `token`. A file that cannot be written is logged with
// what to do (`webhooker admin-token --reset`); the daemon runs on.
void handOverAdminToken(const std::string& token, const std::filesystem::path& dataDir);

}  // namespace webhooker::app
