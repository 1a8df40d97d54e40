// Realistic webhook bodies: deterministic, varied JSON shaped like GitHub and
// Stripe events, 2–30 KB with a median near 8 KB (log-normal sizes), so the
// benchmarks move the bytes a production webhook stream moves.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace webhooker::bench {

struct BodySizes {
  size_t min = 2 * 1024;
  size_t median = 8 * 1024;
  size_t max = 30 * 1024;
};

// `count` bodies from `seed`; the same arguments give the same bodies.
std::vector<std::string> generateBodies(size_t count, uint64_t seed = 42, BodySizes sizes = {});

}  // namespace webhooker::bench
