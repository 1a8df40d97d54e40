#include "server/inbound_verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "base/form_encoding.h"
#include "base/secret.h"
#include "targets/webhook_signature.h"

namespace webhooker::server {

namespace {

Error failure(std::string_view reason, std::string message) {
  return makeError(std::string(reason), std::move(message));
}

Error invalid(std::string message) {
  return makeError(error_code::kInvalidField, std::move(message));
}

std::vector<std::string_view> split(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t at = s.find(sep);
    std::string_view piece = s.substr(0, at);
    while (!piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    while (!piece.empty() && piece.back() == ' ') piece.remove_suffix(1);
    if (!piece.empty()) out.push_back(piece);
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + sep.size());
  }
}

// The first present header of "Name|Other"; "" when none is.
std::string firstHeader(const HeaderLookup& header, std::string_view names) {
  for (std::string_view name : split(names, "|")) {
    std::string value = header(std::string(name).c_str());
    if (!value.empty()) return value;
  }
  return {};
}

// Seconds since the epoch, checked against now ± the tolerance.
Result<void> checkTimestamp(std::string_view text, std::chrono::seconds tolerance, TimePoint now) {
  int64_t seconds = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    return failure(error_code::kMalformedSignature, "the signature timestamp is not a number");
  // Compared in seconds: a sender's number may be far past what a
  // system_clock time point holds (nanoseconds overflow in 2262).
  const int64_t nowSeconds =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  const int64_t slack = tolerance.count();
  if (seconds < nowSeconds - slack || seconds > nowSeconds + slack)
    return failure(error_code::kStaleTimestamp,
                   fmt::format("the signature timestamp is more than {} seconds off", slack));
  return {};
}

// A template's parts: literal text, or a placeholder's name ("body",
// "header:X-Id", …) when `placeholder`.
struct Part {
  bool placeholder = false;
  std::string_view text;
};

Result<std::vector<Part>> templateParts(std::string_view content) {
  std::vector<Part> parts;
  while (!content.empty()) {
    const size_t open = content.find('{');
    const size_t close = content.find('}');
    if (close < open)
      return invalid("verification.content has a \"}\" without its \"{\"");
    if (open == std::string_view::npos) {
      parts.push_back({false, content});
      break;
    }
    if (open > 0) parts.push_back({false, content.substr(0, open)});
    if (close == std::string_view::npos)
      return invalid("verification.content has a \"{\" without its \"}\"");
    parts.push_back({true, content.substr(open + 1, close - open - 1)});
    content.remove_prefix(close + 1);
  }
  return parts;
}

bool isHeaderName(std::string_view name) {
  static constexpr std::string_view kPunctuation = "!#$%&'*+-.^_`~";
  return !name.empty() && name.size() <= 100 && std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) ||
                  kPunctuation.find(c) != std::string_view::npos;
         });
}

bool isHeaderList(std::string_view names) {
  const auto each = split(names, "|");
  return !each.empty() && each.size() <= 3 &&
         std::all_of(each.begin(), each.end(), isHeaderName) &&
         std::count(names.begin(), names.end(), '|') + 1 == static_cast<long>(each.size());
}

// A form body's fields sorted by name (then value), each name then its
// value, as Twilio signs them.
std::string sortedForm(std::string_view contentType, std::string_view body) {
  if (!isFormContentType(contentType)) return {};
  auto pairs = parseFormPairs(body);
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [name, value] : pairs) out += name + value;
  return out;
}

HmacDigest digestOf(SignatureAlgorithm algorithm) {
  switch (algorithm) {
    case SignatureAlgorithm::kHmacSha1: return HmacDigest::kSha1;
    case SignatureAlgorithm::kHmacSha512: return HmacDigest::kSha512;
    default: return HmacDigest::kSha256;
  }
}

bool isHmac(SignatureAlgorithm algorithm) {
  return algorithm != SignatureAlgorithm::kToken && algorithm != SignatureAlgorithm::kBasic;
}

// What the template says is signed, or the reason it cannot be made.
Result<std::string> signedContent(const SignatureScheme& scheme, const InboundRequest& request,
                                  std::string_view timestamp) {
  auto parts = templateParts(scheme.content);
  if (!parts) return failure(error_code::kUnknownScheme, "the entrypoint's scheme is unusable");
  std::string out;
  out.reserve(request.body.size() + 64);
  for (const Part& part : parts.value()) {
    if (!part.placeholder) {
      out += part.text;
    } else if (part.text == "body") {
      out += request.body;
    } else if (part.text == "timestamp") {
      out += timestamp;
    } else if (part.text == "url") {
      if (request.publicUrl.empty())
        return failure(error_code::kUnknownScheme, "the entrypoint has no public URL");
      out += request.publicUrl;
      out += request.target;
    } else if (part.text == "form") {
      out += sortedForm(request.header("Content-Type"), request.body);
    } else if (part.text.starts_with("header:")) {
      const std::string value = firstHeader(request.header, part.text.substr(7));
      if (value.empty())
        return failure(error_code::kMissingSignature,
                       fmt::format("{} is required", part.text.substr(7)));
      out += value;
    } else {
      return failure(error_code::kUnknownScheme, "the entrypoint's scheme is unusable");
    }
  }
  return out;
}

// The signatures the header offers (their prefix taken off) and the
// timestamp among its items, if the scheme keeps it there.
struct Offered {
  std::vector<std::string_view> signatures;
  std::string_view timestamp;
};

Offered offeredIn(const SignatureScheme& scheme, std::string_view value) {
  Offered out;
  std::vector<std::string_view> items;
  if (scheme.separator.empty())
    items.push_back(value);
  else
    items = split(value, scheme.separator);
  for (std::string_view item : items) {
    if (!scheme.signatureKey.empty()) {
      const size_t eq = item.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view key = item.substr(0, eq);
      if (key == scheme.timestampKey) out.timestamp = item.substr(eq + 1);
      if (key != scheme.signatureKey) continue;
      item = item.substr(eq + 1);
    }
    if (!item.starts_with(scheme.prefix)) continue;
    item.remove_prefix(scheme.prefix.size());
    if (!item.empty()) out.signatures.push_back(item);
  }
  return out;
}

// The HMAC key a secret stands for (validated beforehand).
std::string keyOf(const SignatureScheme& scheme, std::string_view secret) {
  if (scheme.secretFormat == SecretFormat::kWhsec) return signingKey(secret).value_or("");
  return std::string(secret);
}

std::string encode(SignatureEncoding encoding, std::string_view raw) {
  return encoding == SignatureEncoding::kBase64 ? base64Encode(raw) : hexEncode(raw);
}

SignatureScheme hmacScheme(std::string header, std::string prefix, SignatureEncoding encoding,
                           std::string content = "{body}") {
  SignatureScheme s;
  s.header = std::move(header);
  s.prefix = std::move(prefix);
  s.encoding = encoding;
  s.content = std::move(content);
  return s;
}

struct Preset {
  VerificationScheme name;
  SignatureScheme scheme;
};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> kPresets = [] {
    using E = SignatureEncoding;
    std::vector<Preset> out;
    out.push_back({VerificationScheme::kGithub, hmacScheme("X-Hub-Signature-256", "sha256=", E::kHex)});
    SignatureScheme stripe = hmacScheme("Stripe-Signature", "", E::kHex, "{timestamp}.{body}");
    stripe.separator = ",";
    stripe.signatureKey = "v1";
    stripe.timestampKey = "t";
    out.push_back({VerificationScheme::kStripe, stripe});
    // Standard Webhooks; Svix sends the same with svix- headers.
    SignatureScheme standard =
        hmacScheme("webhook-signature|svix-signature", "v1,", E::kBase64,
                   "{header:webhook-id|svix-id}.{timestamp}.{body}");
    standard.separator = " ";
    standard.timestampHeader = "webhook-timestamp|svix-timestamp";
    standard.secretFormat = SecretFormat::kWhsec;
    out.push_back({VerificationScheme::kStandard, standard});
    out.push_back({VerificationScheme::kShopify, hmacScheme("X-Shopify-Hmac-Sha256", "", E::kBase64)});
    SignatureScheme slack = hmacScheme("X-Slack-Signature", "v0=", E::kHex, "v0:{timestamp}:{body}");
    slack.timestampHeader = "X-Slack-Request-Timestamp";
    out.push_back({VerificationScheme::kSlack, slack});
    SignatureScheme twilio = hmacScheme("X-Twilio-Signature", "", E::kBase64, "{url}{form}");
    twilio.algorithm = SignatureAlgorithm::kHmacSha1;
    out.push_back({VerificationScheme::kTwilio, twilio});
    SignatureScheme zoom = hmacScheme("x-zm-signature", "v0=", E::kHex, "v0:{timestamp}:{body}");
    zoom.timestampHeader = "x-zm-request-timestamp";
    out.push_back({VerificationScheme::kZoom, zoom});
    out.push_back({VerificationScheme::kLinear, hmacScheme("Linear-Signature", "", E::kHex)});
    SignatureScheme paddle = hmacScheme("Paddle-Signature", "", E::kHex, "{timestamp}:{body}");
    paddle.separator = ";";
    paddle.signatureKey = "h1";
    paddle.timestampKey = "ts";
    out.push_back({VerificationScheme::kPaddle, paddle});
    SignatureScheme gitlab = hmacScheme("X-Gitlab-Token", "", E::kHex);
    gitlab.algorithm = SignatureAlgorithm::kToken;
    out.push_back({VerificationScheme::kGitlab, gitlab});
    out.push_back({VerificationScheme::kMeta, hmacScheme("X-Hub-Signature-256", "sha256=", E::kHex)});
    out.push_back(
        {VerificationScheme::kTwitter, hmacScheme("x-twitter-webhooks-signature", "sha256=", E::kBase64)});
    out.push_back({VerificationScheme::kDropbox, hmacScheme("X-Dropbox-Signature", "", E::kHex)});
    return out;
  }();
  return kPresets;
}

// Whether one of `offered` is the MAC of `content` under one of the secrets.
bool anyMatches(const SignatureScheme& scheme, const std::vector<std::string>& secrets,
                const std::vector<std::string_view>& offered, std::string_view content) {
  bool matched = false;
  for (const std::string& secret : secrets) {
    const std::string expected = schemeMac(scheme, secret, content);
    // Every candidate is compared, so the time does not tell which matched.
    for (std::string_view candidate : offered)
      matched = constantTimeEquals(candidate, expected) || matched;
  }
  return matched;
}

bool anySecretEquals(const std::vector<std::string>& secrets, std::string_view offered) {
  bool matched = false;
  for (const std::string& secret : secrets) matched = constantTimeEquals(offered, secret) || matched;
  return matched;
}

}  // namespace

std::optional<SignatureScheme> presetScheme(VerificationScheme scheme) {
  for (const Preset& p : presets())
    if (p.name == scheme) return p.scheme;
  return std::nullopt;
}

Result<void> validateScheme(const SignatureScheme& scheme) {
  if (scheme.algorithm == SignatureAlgorithm::kBasic) {
    if (!scheme.header.empty() && !isHeaderList(scheme.header))
      return invalid("verification.header must be a header name (or names joined by |)");
  } else if (!isHeaderList(scheme.header)) {
    return invalid("verification.header must be a header name (or up to 3 joined by |)");
  }
  if (scheme.prefix.size() > 32) return invalid("verification.prefix must be at most 32 characters");
  if (scheme.separator.size() > 4)
    return invalid("verification.separator must be at most 4 characters");
  if (!scheme.separator.empty() && scheme.prefix.find(scheme.separator) != std::string::npos)
    return invalid("verification.prefix must not contain verification.separator");
  if (!scheme.signatureKey.empty() && scheme.separator.empty())
    return invalid("verification.signature_key needs verification.separator");
  if (!scheme.timestampKey.empty() && scheme.signatureKey.empty())
    return invalid("verification.timestamp_key needs verification.signature_key");
  if (!scheme.timestampKey.empty() && !scheme.timestampHeader.empty())
    return invalid("verification.timestamp_key and verification.timestamp_header exclude each other");
  if (!scheme.timestampHeader.empty() && !isHeaderList(scheme.timestampHeader))
    return invalid("verification.timestamp_header must be a header name (or up to 3 joined by |)");
  if (scheme.tolerance <= std::chrono::seconds(0) || scheme.tolerance > std::chrono::hours(24 * 7))
    return invalid("verification.tolerance_seconds must be from 1 to 604800");
  if (!isHmac(scheme.algorithm)) {
    if (scheme.content != "{body}" || scheme.usesTimestamp() || !scheme.separator.empty())
      return invalid("verification.algorithm " +
                     std::string(scheme.algorithm == SignatureAlgorithm::kToken ? "token" : "basic") +
                     " takes no content, timestamp or separator");
    return {};
  }
  if (scheme.content.empty() || scheme.content.size() > 256)
    return invalid("verification.content must be 1 to 256 characters");
  auto parts = templateParts(scheme.content);
  if (!parts) return parts.error();
  for (const Part& part : parts.value()) {
    if (!part.placeholder) continue;
    if (part.text == "body" || part.text == "url" || part.text == "form") continue;
    if (part.text == "timestamp") {
      if (!scheme.usesTimestamp())
        return invalid(
            "verification.content names {timestamp}: set verification.timestamp_header or "
            "verification.timestamp_key");
      continue;
    }
    if (part.text.starts_with("header:") && isHeaderList(part.text.substr(7))) continue;
    return invalid(fmt::format(
        "verification.content names an unknown part {{{}}}: use {{body}}, {{timestamp}}, {{url}}, "
        "{{form}} or {{header:Name}}",
        part.text));
  }
  return {};
}

Result<void> validateSecret(const SignatureScheme& scheme, std::string_view secret) {
  if (scheme.secretFormat == SecretFormat::kWhsec) {
    if (!signingKey(secret))
      return invalid("verification.secret must be \"whsec_\" followed by base64 of 24-64 bytes");
    return {};
  }
  if (secret.empty() || secret.size() > 256)
    return invalid("verification.secret must be 1 to 256 characters");
  if (scheme.algorithm == SignatureAlgorithm::kBasic && secret.find(':') == std::string_view::npos)
    return invalid("verification.secret must be \"user:password\" for algorithm basic");
  return {};
}

Result<void> validateVerificationSecret(std::string_view schemeWord, std::string_view secret) {
  const auto scheme = parseVerificationScheme(schemeWord);
  const auto preset = scheme ? presetScheme(*scheme) : std::nullopt;
  if (!preset) return {};
  return validateSecret(*preset, secret);
}

bool isUnusableSettings(const Error& failure) {
  return failure.code == error_code::kUnknownScheme || failure.code == error_code::kUnusableSecret;
}

std::string schemeMac(const SignatureScheme& scheme, std::string_view secret,
                      std::string_view data) {
  return encode(scheme.encoding, hmac(digestOf(scheme.algorithm), keyOf(scheme, secret), data));
}

Result<void> verifyRequest(const std::optional<SignatureScheme>& scheme,
                           const std::vector<std::string>& secrets, const InboundRequest& request,
                           TimePoint now) {
  if (!scheme) return {};
  // The rules the admin API enforced when the secrets were set: a row edited
  // since (a NULL secret reads as "") must not verify against an empty key.
  if (secrets.empty())
    return failure(error_code::kUnusableSecret, "the entrypoint's verification secret is unusable");
  for (const std::string& secret : secrets)
    if (!validateSecret(*scheme, secret))
      return failure(error_code::kUnusableSecret,
                     "the entrypoint's verification secret is unusable");

  const std::string_view headerNames =
      scheme->header.empty() ? std::string_view("Authorization") : scheme->header;
  const std::string value = firstHeader(request.header, headerNames);
  if (value.empty())
    return failure(error_code::kMissingSignature, fmt::format("{} is required", headerNames));

  if (scheme->algorithm == SignatureAlgorithm::kToken) {
    std::string_view offered = value;
    if (!offered.starts_with(scheme->prefix))
      return failure(error_code::kMalformedSignature,
                     fmt::format("{} must start with {}", headerNames, scheme->prefix));
    offered.remove_prefix(scheme->prefix.size());
    if (!anySecretEquals(secrets, offered))
      return failure(error_code::kBadSignature, fmt::format("{} does not match", headerNames));
    return {};
  }
  if (scheme->algorithm == SignatureAlgorithm::kBasic) {
    std::string_view offered = value;
    constexpr std::string_view kBasic = "Basic ";
    if (offered.size() < kBasic.size() ||
        !std::equal(kBasic.begin(), kBasic.end(), offered.begin(),
                    [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
      return failure(error_code::kMalformedSignature,
                     fmt::format("{} must be Basic credentials", headerNames));
    offered.remove_prefix(kBasic.size());
    const auto decoded = base64Decode(offered);
    if (!decoded)
      return failure(error_code::kMalformedSignature,
                     fmt::format("{} must be Basic credentials", headerNames));
    if (!anySecretEquals(secrets, *decoded))
      return failure(error_code::kBadSignature, fmt::format("{} does not match", headerNames));
    return {};
  }

  const Offered offered = offeredIn(*scheme, value);
  std::string timestamp;
  if (!scheme->timestampKey.empty()) {
    timestamp = std::string(offered.timestamp);
    if (timestamp.empty())
      return failure(error_code::kMalformedSignature,
                     fmt::format("{} needs {}= and {}=", headerNames, scheme->timestampKey,
                                 scheme->signatureKey));
  } else if (!scheme->timestampHeader.empty()) {
    timestamp = firstHeader(request.header, scheme->timestampHeader);
    if (timestamp.empty())
      return failure(error_code::kMissingSignature,
                     fmt::format("{} is required", scheme->timestampHeader));
  }
  if (offered.signatures.empty())
    return failure(error_code::kMalformedSignature,
                   scheme->signatureKey.empty()
                       ? fmt::format("{} must hold a signature starting with {}", headerNames,
                                     scheme->prefix)
                       : fmt::format("{} needs {}=", headerNames, scheme->signatureKey));
  if (scheme->usesTimestamp())
    if (auto r = checkTimestamp(timestamp, scheme->tolerance, now); !r) return r;
  auto content = signedContent(*scheme, request, timestamp);
  if (!content) return content.error();
  if (!anyMatches(*scheme, secrets, offered.signatures, content.value()))
    return failure(error_code::kBadSignature, fmt::format("no signature in {} matches", headerNames));
  return {};
}

Result<void> verifyInbound(std::string_view schemeWord, std::string_view secret,
                           const HeaderLookup& header, std::string_view body, TimePoint now) {
  const auto scheme = parseVerificationScheme(schemeWord);
  if (scheme == VerificationScheme::kNone) return {};
  const auto preset = scheme ? presetScheme(*scheme) : std::nullopt;
  if (!preset)
    return failure(error_code::kUnknownScheme, "the entrypoint's verification scheme is unknown");
  const InboundRequest request{header, body, "", ""};
  return verifyRequest(preset, {std::string(secret)}, request, now);
}

}  // namespace webhooker::server
