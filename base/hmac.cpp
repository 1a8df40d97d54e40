#include "base/hmac.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace webhooker {

std::string hmac(HmacDigest digest, std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int macLength = 0;
  // HMAC() rejects a null key pointer even for a zero length key.
  static const unsigned char kEmpty = 0;
  const void* keyData = key.empty() ? &kEmpty : static_cast<const void*>(key.data());
  const auto* dataBytes = reinterpret_cast<const unsigned char*>(data.data());
  const EVP_MD* md = digest == HmacDigest::kSha1     ? EVP_sha1()
                     : digest == HmacDigest::kSha512 ? EVP_sha512()
                                                     : EVP_sha256();
  if (HMAC(md, keyData, static_cast<int>(key.size()), data.empty() ? &kEmpty : dataBytes,
           data.size(), mac, &macLength) == nullptr)
    throw std::runtime_error("hmac: OpenSSL HMAC failed");
  return std::string(reinterpret_cast<const char*>(mac), macLength);
}

}  // namespace webhooker
