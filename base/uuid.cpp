#include "base/uuid.h"

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <stdexcept>

#include "base/ascii_case.h"

namespace webhooker {

namespace {

using UuidBytes = std::array<unsigned char, 16>;

// Each RAND_bytes call costs a getpid() system call (OpenSSL's fork check)
// and its generator's setup: ids take their bytes from a per-thread buffer
// filled 4 KB at a time instead (ingest makes one per event and delivery).
// The process never forks without exec (jq workers are spawned), so no two
// processes share a buffer.
UuidBytes randomBytes() {
  thread_local std::array<unsigned char, 4096> buffer;
  thread_local size_t used = buffer.size();
  UuidBytes b{};
  if (used + b.size() > buffer.size()) {
    if (RAND_bytes(buffer.data(), static_cast<int>(buffer.size())) != 1)
      throw std::runtime_error("the system random generator failed");
    used = 0;
  }
  std::copy_n(buffer.begin() + static_cast<std::ptrdiff_t>(used), b.size(), b.begin());
  used += b.size();
  return b;
}

std::string format(UuidBytes b, unsigned version) {
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | (version << 4));
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 9562 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 0x0f]);
  }
  return out;
}

}  // namespace

std::string newUuid() { return format(randomBytes(), 4); }

std::string newTimeOrderedUuid() {
  UuidBytes b = randomBytes();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  for (int i = 0; i < 6; ++i) b[i] = static_cast<unsigned char>(ms >> (8 * (5 - i)));
  return format(b, 7);
}

bool isUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

std::string normalizeUuid(std::string_view s) { return asciiLower(s); }

}  // namespace webhooker
