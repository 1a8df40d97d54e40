// VerificationScheme: how an entrypoint verifies who sent a request.
//
// The main DB stores it as TEXT in entrypoints.verification ("none",
// "custom" or a preset's name); the same words are the admin API's and the
// CLI's. Code passes the enum around and converts only where the text is
// read or written: inside storage/ and where the API parses or prints it.
// What each preset checks is server/inbound_verifier.cpp's.
#pragma once

#include <optional>
#include <string_view>

namespace webhooker {

enum class VerificationScheme {
  kNone,
  kCustom,  // the parts are the entrypoint's own (inbound settings)
  kGithub,
  kStripe,
  kStandard,  // Standard Webhooks (and Svix)
  kShopify,
  kSlack,
  kTwilio,
  kZoom,
  kLinear,
  kPaddle,
  kGitlab,
  kMeta,
  kTwitter,
  kDropbox,
};

// Every scheme; the presets in the order the docs list them.
inline constexpr VerificationScheme kVerificationSchemes[] = {
    VerificationScheme::kNone,    VerificationScheme::kCustom,  VerificationScheme::kGithub,
    VerificationScheme::kStripe,  VerificationScheme::kStandard, VerificationScheme::kShopify,
    VerificationScheme::kSlack,   VerificationScheme::kTwilio,  VerificationScheme::kZoom,
    VerificationScheme::kLinear,  VerificationScheme::kPaddle,  VerificationScheme::kGitlab,
    VerificationScheme::kMeta,    VerificationScheme::kTwitter, VerificationScheme::kDropbox};

constexpr bool isPresetScheme(VerificationScheme scheme) {
  return scheme != VerificationScheme::kNone && scheme != VerificationScheme::kCustom;
}

// The stored and shown word (not named toString: doctest finds that name by
// argument-dependent lookup).
constexpr std::string_view schemeWord(VerificationScheme scheme) {
  switch (scheme) {
    case VerificationScheme::kNone: return "none";
    case VerificationScheme::kCustom: return "custom";
    case VerificationScheme::kGithub: return "github";
    case VerificationScheme::kStripe: return "stripe";
    case VerificationScheme::kStandard: return "standard";
    case VerificationScheme::kShopify: return "shopify";
    case VerificationScheme::kSlack: return "slack";
    case VerificationScheme::kTwilio: return "twilio";
    case VerificationScheme::kZoom: return "zoom";
    case VerificationScheme::kLinear: return "linear";
    case VerificationScheme::kPaddle: return "paddle";
    case VerificationScheme::kGitlab: return "gitlab";
    case VerificationScheme::kMeta: return "meta";
    case VerificationScheme::kTwitter: return "twitter";
    case VerificationScheme::kDropbox: return "dropbox";
  }
  return "none";  // not reached: the switch names every scheme
}

// nullopt for a word that is no scheme (the words are case-sensitive).
constexpr std::optional<VerificationScheme> parseVerificationScheme(std::string_view text) {
  for (VerificationScheme s : kVerificationSchemes)
    if (schemeWord(s) == text) return s;
  return std::nullopt;
}

}  // namespace webhooker
