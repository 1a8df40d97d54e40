#include "targets/egress.h"

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/error_codes.h"
#include "base/hex_digit.h"
#include "base/secret.h"
#include "base/url.h"

namespace webhooker {

namespace {

constexpr size_t kMaxPem = 256 * 1024;

Error egressInvalid(std::string message) {
  return makeError(error_code::kInvalidConfig, std::move(message));
}

// %XX escapes of a URL's user or password.
std::optional<std::string> percentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = hexDigitValue(text[i + 1]);
    const int lo = hexDigitValue(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

BioPtr memoryBio(std::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Never prompts: an encrypted key is refused, not asked for on a terminal.
int noPassphrase(char*, int, int, void*) { return -1; }

std::vector<X509Ptr> readCertificates(std::string_view pem) {
  std::vector<X509Ptr> out;
  BioPtr bio = memoryBio(pem);
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, noPassphrase, nullptr))
    out.emplace_back(cert);
  ERR_clear_error();  // the end of the text reads as an error
  return out;
}

std::string timeText(const ASN1_TIME* t) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  ASN1_TIME_print(bio.get(), t);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// "" when `cert` is valid now, else why not.
std::string validityProblem(X509* cert) {
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0)
    return "expired on " + timeText(X509_get0_notAfter(cert));
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0)
    return "is not valid before " + timeText(X509_get0_notBefore(cert));
  return "";
}

std::string sha256Hex(const std::string& material) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(material.data(), material.size(), digest, &length, EVP_sha256(), nullptr);
  std::string out;
  for (unsigned int i = 0; i < length; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

}  // namespace

std::string ProxyAddress::display() const {
  return fmt::format("{}:{}", ipv6Literal ? "[" + host + "]" : host, port);
}

Result<ProxyAddress> parseProxyUrl(std::string_view text) {
  const auto url = parseHttpUrl(text);
  if (!url || url->scheme != "http")
    return egressInvalid("the egress proxy must be an http://host:port URL");
  if (url->target != "/")
    return egressInvalid("the egress proxy URL must have no path or query");
  ProxyAddress out;
  out.host = url->host;
  out.port = url->port;
  out.ipv6Literal = url->ipv6Literal;
  if (!url->userinfo.empty()) {
    const size_t colon = url->userinfo.find(':');
    const auto user = percentDecode(url->userinfo.substr(0, colon));
    const auto password = percentDecode(
        colon == std::string::npos ? std::string_view() : std::string_view(url->userinfo).substr(colon + 1));
    if (!user || !password)
      return egressInvalid("the egress proxy URL's credentials have a malformed % escape");
    out.authorization = "Basic " + base64Encode(*user + ":" + *password);
  }
  return out;
}

std::shared_ptr<const EgressOptions> sealEgress(EgressOptions options) {
  std::string material;
  if (options.proxy)
    material += "proxy\n" + options.proxy->display() + "\n" + options.proxy->authorization + "\n";
  material += "ca\n" + options.tls.caBundle + (options.tls.caBundleOnly ? "\nonly\n" : "\n");
  material += "cert\n" + options.tls.clientCert + "\nkey\n" + options.tls.clientKey;
  options.identity = sha256Hex(material);
  if (options.oauth2) {
    const OAuth2Settings& o = *options.oauth2;
    options.oauth2->key = sha256Hex(fmt::format(
        "{}://{}:{}{}\n{}\n{}\n{}\n{}", o.tokenUrl.scheme, o.tokenUrl.host, o.tokenUrl.port,
        o.tokenUrl.target, o.clientId, o.clientSecret, o.scope, o.audience));
  }
  return std::make_shared<const EgressOptions>(std::move(options));
}

Result<void> checkCaBundle(std::string_view pem, std::string_view field) {
  if (pem.size() > kMaxPem) return egressInvalid(fmt::format("{} is larger than 256 KiB", field));
  const auto certs = readCertificates(pem);
  if (certs.empty()) return egressInvalid(fmt::format("{} holds no PEM certificate", field));
  for (size_t i = 0; i < certs.size(); ++i)
    if (const std::string problem = validityProblem(certs[i].get()); !problem.empty())
      return egressInvalid(fmt::format("{}: certificate {} {}", field, i + 1, problem));
  return {};
}

Result<void> checkClientCertificate(std::string_view certPem, std::string_view keyPem,
                                    std::string_view field) {
  if (certPem.empty() != keyPem.empty())
    return egressInvalid(fmt::format("{}.client_cert and {}.client_key go together", field, field));
  if (certPem.size() > kMaxPem || keyPem.size() > kMaxPem)
    return egressInvalid(fmt::format("{}.client_cert or client_key is larger than 256 KiB", field));
  const auto certs = readCertificates(certPem);
  if (certs.empty())
    return egressInvalid(fmt::format("{}.client_cert holds no PEM certificate", field));
  if (const std::string problem = validityProblem(certs.front().get()); !problem.empty())
    return egressInvalid(fmt::format("{}.client_cert {}", field, problem));
  BioPtr bio = memoryBio(keyPem);
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, noPassphrase, nullptr));
  ERR_clear_error();
  if (!key)
    return egressInvalid(fmt::format(
        "{}.client_key is not an unencrypted PEM private key", field));
  if (X509_check_private_key(certs.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return egressInvalid(fmt::format("{}.client_key does not belong to {}.client_cert", field, field));
  }
  return {};
}

}  // namespace webhooker
