// The value of one hexadecimal digit, for the decoders of percent escapes,
// JSON \u escapes and inet_aton's hex parts.
#pragma once

namespace webhooker {

// 0-15 for 0-9, a-f and A-F; -1 for any other byte.
inline int hexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace webhooker
