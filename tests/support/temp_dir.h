// TempDir: a fresh folder under the system temp dir, removed with all its
// files when the test ends. Every test that touches SQLite gets its own.
// Header-only: the benchmarks (bench/) use it too, without the test support
// library.
#pragma once

#include <filesystem>
#include <random>
#include <string>
#include <system_error>

namespace webhooker::testing {

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("webhooker-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace webhooker::testing
