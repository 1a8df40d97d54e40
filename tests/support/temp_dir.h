// TempDir: a fresh folder under the system temp dir, removed with all its
// files when the test ends. Every test that touches SQLite gets its own.
#pragma once

#include <filesystem>
#include <string>

namespace webhooker::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace webhooker::testing
