// eventually(): polls a condition until it holds or a timeout passes.
// Header-only: the benchmarks (bench/) use it too, without the test support
// library.
#pragma once

#include <chrono>
#include <thread>

namespace webhooker::testing {

// Polls `done` every 10 ms until it holds (true) or `timeout` passes (false).
template <typename Predicate>
bool eventually(Predicate done, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace webhooker::testing
