#include "server/inbound_settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "server/request_fields.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

constexpr size_t kMaxPublicUrl = 512;

Error invalidSetting(std::string message) {
  return makeError(error_code::kInvalidField, std::move(message));
}

// A field reader's error, its field named as the API nests it.
Error within(std::string_view parent, const Error& e) {
  return makeError(e.code, fmt::format("{}.{}", parent, e.message));
}

struct NamedAlgorithm {
  std::string_view name;
  SignatureAlgorithm algorithm;
};
constexpr NamedAlgorithm kAlgorithms[] = {{"hmac-sha1", SignatureAlgorithm::kHmacSha1},
                                          {"hmac-sha256", SignatureAlgorithm::kHmacSha256},
                                          {"hmac-sha512", SignatureAlgorithm::kHmacSha512},
                                          {"token", SignatureAlgorithm::kToken},
                                          {"basic", SignatureAlgorithm::kBasic}};

constexpr std::pair<std::string_view, HandshakeKind> kHandshakes[] = {
    {"slack", HandshakeKind::kSlack},
    {"meta", HandshakeKind::kMeta},
    {"zoom", HandshakeKind::kZoom},
    {"twitter", HandshakeKind::kTwitter},
    {"dropbox", HandshakeKind::kDropbox}};

// The scheme whose provider a handshake kind belongs to.
constexpr VerificationScheme schemeOf(HandshakeKind kind) {
  switch (kind) {
    case HandshakeKind::kSlack: return VerificationScheme::kSlack;
    case HandshakeKind::kMeta: return VerificationScheme::kMeta;
    case HandshakeKind::kZoom: return VerificationScheme::kZoom;
    case HandshakeKind::kTwitter: return VerificationScheme::kTwitter;
    case HandshakeKind::kDropbox: return VerificationScheme::kDropbox;
    case HandshakeKind::kNone: break;
  }
  return VerificationScheme::kNone;
}

std::optional<HandshakeKind> handshakeOf(std::string_view name) {
  for (const auto& [n, kind] : kHandshakes)
    if (n == name) return kind;
  return std::nullopt;
}

// A string member within [0, maxLength] (absent: `fallback`).
Result<std::string> text(const json& v, const char* key, size_t maxLength,
                         std::string fallback = {}) {
  auto value = stringField(v, key, maxLength, /*allowEmpty=*/true);
  if (!value) return within("verification", value.error());
  return value.value().value_or(std::move(fallback));
}

bool isPublicUrl(std::string_view url) {
  if (!url.starts_with("https://") && !url.starts_with("http://")) return false;
  const size_t hostAt = url.find("//") + 2;
  return url.size() > hostAt && url.size() <= kMaxPublicUrl &&
         std::none_of(url.begin(), url.end(), [](char c) {
           return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '?' || c == '#';
         });
}

constexpr std::string_view kCustomFields[] = {
    "header",        "prefix",           "separator", "signature_key", "timestamp_key",
    "timestamp_header", "algorithm",     "encoding",  "secret_format", "content"};

// The scheme a name and its parts (the verification object without scheme
// and secrets) stand for, and the public URL. Errors name the field.
Result<std::pair<std::optional<SignatureScheme>, std::string>> schemeFrom(VerificationScheme name,
                                                                          const json& parts) {
  using Out = std::pair<std::optional<SignatureScheme>, std::string>;
  if (name == VerificationScheme::kNone) {
    if (!parts.empty())
      return invalidSetting(fmt::format("verification.{} does not apply to scheme none",
                                 parts.begin().key()));
    return Out();
  }
  if (auto r = refuseUnknownFields(parts, {"tolerance_seconds", "public_url", "header", "prefix",
                                           "separator", "signature_key", "timestamp_key",
                                           "timestamp_header", "algorithm", "encoding",
                                           "secret_format", "content"});
      !r)
    return within("verification", r.error());
  std::optional<SignatureScheme> scheme;
  if (name == VerificationScheme::kCustom) {
    SignatureScheme s;
    auto algorithm = text(parts, "algorithm", 16);
    if (!algorithm) return algorithm.error();
    const auto* named = std::find_if(std::begin(kAlgorithms), std::end(kAlgorithms),
                                     [&](const NamedAlgorithm& a) { return a.name == *algorithm; });
    if (named == std::end(kAlgorithms))
      return invalidSetting(
          "verification.algorithm must be hmac-sha1, hmac-sha256, hmac-sha512, token or basic");
    s.algorithm = named->algorithm;
    auto encoding = text(parts, "encoding", 16, "hex");
    if (!encoding) return encoding.error();
    if (*encoding != "hex" && *encoding != "base64")
      return invalidSetting("verification.encoding must be hex or base64");
    s.encoding = *encoding == "hex" ? SignatureEncoding::kHex : SignatureEncoding::kBase64;
    auto format = text(parts, "secret_format", 16, "raw");
    if (!format) return format.error();
    if (*format != "raw" && *format != "whsec")
      return invalidSetting("verification.secret_format must be raw or whsec");
    s.secretFormat = *format == "raw" ? SecretFormat::kRaw : SecretFormat::kWhsec;
    for (auto [key, field] : {std::pair{"header", &s.header}, {"prefix", &s.prefix},
                              {"separator", &s.separator}, {"signature_key", &s.signatureKey},
                              {"timestamp_key", &s.timestampKey},
                              {"timestamp_header", &s.timestampHeader}}) {
      auto value = text(parts, key, 256);
      if (!value) return value.error();
      *field = std::move(value.value());
    }
    auto content = text(parts, "content", 256, "{body}");
    if (!content) return content.error();
    s.content = std::move(content.value());
    scheme = std::move(s);
  } else {
    scheme = presetScheme(name);
    if (!scheme) return invalidSetting("verification.scheme is not one webhooker knows");
    for (std::string_view field : kCustomFields)
      if (parts.contains(field))
        return invalidSetting(fmt::format("verification.{} applies to scheme custom only", field));
  }
  if (parts.contains("tolerance_seconds")) {
    const json& t = parts["tolerance_seconds"];
    if (!t.is_number_integer())
      return invalidSetting("verification.tolerance_seconds must be an integer from 1 to 604800");
    if (!scheme->usesTimestamp())
      return invalidSetting("verification.tolerance_seconds applies only to a scheme with a timestamp");
    scheme->tolerance = std::chrono::seconds(
        t.is_number_unsigned() ? std::min<uint64_t>(t.get<uint64_t>(), 1u << 30) : t.get<int64_t>());
  }
  if (auto r = validateScheme(*scheme); !r) return r.error();
  auto url = text(parts, "public_url", kMaxPublicUrl);
  if (!url) return url.error();
  std::string publicUrl = std::move(url.value());
  while (publicUrl.ends_with('/')) publicUrl.pop_back();
  if (!publicUrl.empty() && !isPublicUrl(publicUrl))
    return invalidSetting(
        "verification.public_url must be an http(s) URL without query or fragment, the scheme, "
        "host and any path prefix senders call");
  if (scheme->usesUrl() && publicUrl.empty())
    return invalidSetting(fmt::format(
        "verification.public_url is required: scheme {} signs the URL the sender calls",
        schemeWord(name)));
  return Out(std::move(scheme), std::move(publicUrl));
}

Result<std::optional<CustomResponse>> responseFrom(const json& r) {
  if (r.is_null()) return std::optional<CustomResponse>();
  if (!r.is_object()) return invalidSetting("response must be an object or null");
  if (auto ok = refuseUnknownFields(r, {"status", "content_type", "body"}); !ok)
    return within("response", ok.error());
  CustomResponse out;
  auto status = intField(r, "status", 200, 299);
  if (!status) return within("response", status.error());
  out.status = static_cast<int>(status.value().value_or(200));
  auto type = stringField(r, "content_type", 100);
  if (!type) return within("response", type.error());
  out.contentType = type.value().value_or("text/plain; charset=utf-8");
  if (std::any_of(out.contentType.begin(), out.contentType.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f;
      }))
    return invalidSetting("response.content_type must be printable ASCII");
  auto body = stringField(r, "body", kMaxResponseBody, /*allowEmpty=*/true);
  if (!body) return within("response", body.error());
  out.body = body.value().value_or("");
  return std::optional<CustomResponse>(std::move(out));
}

json responseJson(const CustomResponse& r) {
  return {{"status", r.status}, {"content_type", r.contentType}, {"body", r.body}};
}

json parsedObject(const std::string& text) {
  if (text.empty()) return json::object();
  json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return v.is_object() ? v : json();  // discarded: unreadable
}

}  // namespace

std::string_view handshakeName(HandshakeKind kind) {
  for (const auto& [name, k] : kHandshakes)
    if (k == kind) return name;
  return "none";
}

InboundSettings inboundSettingsOf(const Entrypoint& e) {
  InboundSettings out;
  const json settings = parsedObject(e.inboundSettings);
  const json secrets = parsedObject(e.inboundSecrets);
  if (settings.is_discarded() || secrets.is_discarded()) {
    out.unusable = true;
    return out;
  }
  if (!e.verification) {  // a scheme this release does not know
    out.unusable = true;
    return out;
  }
  const json parts = settings.contains("verification") ? settings["verification"] : json::object();
  auto scheme = parts.is_object() ? schemeFrom(*e.verification, parts)
                                  : Result<std::pair<std::optional<SignatureScheme>, std::string>>(
                                        invalidSetting("verification"));
  if (!scheme) {
    out.unusable = true;
    return out;
  }
  out.scheme = std::move(scheme.value().first);
  out.publicUrl = std::move(scheme.value().second);
  if (out.scheme) {
    out.secrets.push_back(e.verificationSecret);
    if (secrets.contains("previous") && secrets["previous"].is_array())
      for (const json& s : secrets["previous"])
        out.secrets.push_back(s.is_string() ? s.get<std::string>() : std::string());
  }
  if (settings.contains("handshake")) {
    const json& h = settings["handshake"];
    const auto kind = h.is_string() ? handshakeOf(h.get<std::string>()) : std::nullopt;
    if (!kind) {
      out.unusable = true;
      return out;
    }
    out.handshake = *kind;
    if (secrets.contains("verify_token") && secrets["verify_token"].is_string())
      out.verifyToken = secrets["verify_token"].get<std::string>();
  }
  if (settings.contains("response")) {
    auto response = responseFrom(settings["response"]);
    if (!response) {
      out.unusable = true;
      return out;
    }
    out.response = std::move(response.value());
  }
  return out;
}

Result<std::optional<EntrypointInbound>> applyInboundFields(const json& body,
                                                            const Entrypoint& current) {
  if (!body.contains("verification") && !body.contains("handshake") && !body.contains("response"))
    return std::optional<EntrypointInbound>();
  EntrypointInbound out{current.verification, current.verificationSecret, "", ""};
  json settings = parsedObject(current.inboundSettings);
  json secrets = parsedObject(current.inboundSecrets);
  if (settings.is_discarded()) settings = json::object();
  if (secrets.is_discarded()) secrets = json::object();

  if (body.contains("verification")) {
    const json& v = body["verification"];
    if (!v.is_object()) return invalidSetting("verification must be an object");
    auto scheme = stringField(v, "scheme", 16);
    if (!scheme) return within("verification", scheme.error());
    const std::optional<VerificationScheme> parsed =
        scheme.value() ? parseVerificationScheme(*scheme.value()) : std::nullopt;
    if (!parsed) {
      std::vector<std::string_view> presets;
      for (VerificationScheme s : kVerificationSchemes)
        if (isPresetScheme(s)) presets.push_back(schemeWord(s));
      return invalidSetting(fmt::format("verification.scheme must be none, custom or a preset: {}",
                                        fmt::join(presets, ", ")));
    }
    const VerificationScheme name = *parsed;
    json parts = v;
    parts.erase("scheme");
    parts.erase("secret");
    parts.erase("secrets");
    auto resolved = schemeFrom(name, parts);
    if (!resolved) return resolved.error();
    std::vector<std::string> keys;
    if (v.contains("secret") && v.contains("secrets"))
      return invalidSetting("verification.secret and verification.secrets exclude each other");
    if (v.contains("secret")) {
      auto secret = stringField(v, "secret", 256, /*allowEmpty=*/true);
      if (!secret) return within("verification", secret.error());
      keys.push_back(*secret.value());
    } else if (v.contains("secrets")) {
      const json& list = v["secrets"];
      if (!list.is_array() || list.empty() || list.size() > kMaxSecrets)
        return invalidSetting(fmt::format(
            "verification.secrets must be an array of 1 to {} secrets, the newest first",
            kMaxSecrets));
      for (const json& s : list) {
        if (!s.is_string()) return invalidSetting("verification.secrets must hold strings");
        keys.push_back(s.get<std::string>());
      }
    }
    const std::optional<SignatureScheme>& s = resolved.value().first;
    if (!s && !keys.empty()) return invalidSetting("verification none takes no secret");
    if (s && keys.empty()) keys.push_back("");  // refused by validateSecret below
    if (s)
      for (const std::string& key : keys)
        if (auto r = validateSecret(*s, key); !r) return r.error();
    out.verification = name;
    out.verificationSecret = s ? keys.front() : std::string();
    secrets.erase("previous");
    if (keys.size() > 1) secrets["previous"] = std::vector<std::string>(keys.begin() + 1, keys.end());
    if (parts.empty())
      settings.erase("verification");
    else
      settings["verification"] = parts;
  }
  if (body.contains("handshake")) {
    const json& h = body["handshake"];
    settings.erase("handshake");
    secrets.erase("verify_token");
    if (!h.is_null()) {
      if (!h.is_object()) return invalidSetting("handshake must be an object or null");
      if (auto r = refuseUnknownFields(h, {"kind", "verify_token"}); !r)
        return within("handshake", r.error());
      auto kind = stringField(h, "kind", 16);
      if (!kind) return within("handshake", kind.error());
      if (!kind.value() || !handshakeOf(*kind.value()))
        return invalidSetting("handshake.kind must be slack, meta, zoom, twitter or dropbox");
      auto token = stringField(h, "verify_token", 256);
      if (!token) return within("handshake", token.error());
      if (*kind.value() == "meta" && !token.value())
        return invalidSetting("handshake.verify_token is required for kind meta");
      if (*kind.value() != "meta" && token.value())
        return invalidSetting("handshake.verify_token applies to kind meta only");
      settings["handshake"] = *kind.value();
      if (token.value()) secrets["verify_token"] = *token.value();
    }
  }
  if (settings.contains("handshake")) {
    const json& h = settings["handshake"];
    const std::string kind = h.is_string() ? h.get<std::string>() : h.dump();
    const auto known = handshakeOf(kind);
    if (!known || !out.verification || schemeOf(*known) != *out.verification)
      return invalidSetting(fmt::format(
          "handshake: scheme {} has no {} handshake (it needs verification.scheme {})",
          out.verification ? schemeWord(*out.verification) : "(unknown)", kind, kind));
  }
  if (body.contains("response")) {
    auto response = responseFrom(body["response"]);
    if (!response) return response.error();
    if (response.value())
      settings["response"] = responseJson(*response.value());
    else
      settings.erase("response");
  }
  out.inboundSettings = settings.empty() ? std::string() : settings.dump();
  out.inboundSecrets = secrets.empty() ? std::string() : secrets.dump();
  return std::optional<EntrypointInbound>(std::move(out));
}

void addInboundJson(const Entrypoint& e, json& out) {
  const InboundSettings inbound = inboundSettingsOf(e);
  json settings = parsedObject(e.inboundSettings);
  if (settings.is_discarded()) settings = json::object();
  json verification = settings.contains("verification") && settings["verification"].is_object()
                          ? settings["verification"]
                          : json::object();
  verification["secret_count"] = inbound.secrets.size();
  out["verification_settings"] = std::move(verification);
  out["handshake"] = inbound.handshake == HandshakeKind::kNone
                         ? json(nullptr)
                         : json{{"kind", handshakeName(inbound.handshake)}};
  out["response"] = inbound.response ? responseJson(*inbound.response) : json(nullptr);
}

}  // namespace webhooker::server
