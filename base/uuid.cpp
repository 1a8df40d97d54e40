#include "base/uuid.h"

#include <openssl/rand.h>

#include <array>
#include <cctype>
#include <chrono>
#include <stdexcept>

#include "base/ascii_case.h"

namespace webhooker {

namespace {

using UuidBytes = std::array<unsigned char, 16>;

UuidBytes randomBytes() {
  UuidBytes b{};
  if (RAND_bytes(b.data(), static_cast<int>(b.size())) != 1)
    throw std::runtime_error("the system random generator failed");
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
