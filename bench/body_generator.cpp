#include "bench/body_generator.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <random>

namespace webhooker::bench {

namespace {

using Json = nlohmann::json;

std::string word(std::mt19937_64& rng) {
  static const char* const kWords[] = {"alpha", "build", "merge", "deploy", "invoice", "charge",
                                       "refund", "review", "commit", "branch", "customer", "plan",
                                       "release", "issue", "payment", "webhook", "status", "tag"};
  return kWords[rng() % std::size(kWords)];
}

std::string hexId(std::mt19937_64& rng, size_t length) {
  static const char kHex[] = "0123456789abcdef";
  std::string s(length, '0');
  for (char& c : s) c = kHex[rng() % 16];
  return s;
}

Json githubPush(std::mt19937_64& rng, size_t n) {
  Json j = {{"ref", "refs/heads/" + word(rng)},
            {"before", hexId(rng, 40)},
            {"after", hexId(rng, 40)},
            {"repository",
             {{"id", rng() % 1'000'000'000},
              {"full_name", word(rng) + "/" + word(rng)},
              {"private", rng() % 2 == 0},
              {"html_url", "https://github.com/" + word(rng) + "/" + word(rng)}}},
            {"pusher", {{"name", word(rng)}, {"email", word(rng) + "@example.com"}}},
            {"commits", Json::array()}};
  for (size_t i = 0; i < n; ++i) {
    j["commits"].push_back({{"id", hexId(rng, 40)},
                            {"message", word(rng) + " " + word(rng) + " " + word(rng)},
                            {"timestamp", "2026-11-29T17:48:05Z"},
                            {"author", {{"name", word(rng)}, {"username", word(rng)}}},
                            {"added", {word(rng) + ".cpp"}},
                            {"modified", {word(rng) + ".h", word(rng) + ".md"}}});
  }
  return j;
}

Json stripeEvent(std::mt19937_64& rng, size_t n) {
  Json j = {{"id", "evt_" + hexId(rng, 24)},
            {"object", "event"},
            {"api_version", "2024-06-20"},
            {"created", 1'700'000'000 + rng() % 100'000'000},
            {"type", word(rng) + "." + word(rng)},
            {"livemode", false},
            {"data", {{"object", {{"id", "in_" + hexId(rng, 24)}, {"lines", Json::array()}}}}}};
  for (size_t i = 0; i < n; ++i) {
    j["data"]["object"]["lines"].push_back({{"id", "il_" + hexId(rng, 24)},
                                            {"amount", rng() % 100'000},
                                            {"currency", "eur"},
                                            {"description", word(rng) + " " + word(rng)},
                                            {"metadata", {{"order", hexId(rng, 12)}}}});
  }
  return j;
}

// The document with as many items as fit in `size` bytes (at least one).
std::string bodyOfSize(std::mt19937_64& rng, size_t size) {
  const bool github = rng() % 2 == 0;
  const uint64_t seed = rng();
  const auto render = [&](size_t items) {
    std::mt19937_64 shape(seed);  // the same prefix whatever the item count
    return (github ? githubPush(shape, items) : stripeEvent(shape, items)).dump();
  };
  const size_t one = render(1).size();
  const size_t perItem = std::max<size_t>(1, (render(9).size() - one) / 8);
  size_t items = 1 + (size > one ? (size - one) / perItem : 0);
  std::string body = render(items);
  while (body.size() > size && items > 1) body = render(--items);
  return body;
}

}  // namespace

std::vector<std::string> generateBodies(size_t count, uint64_t seed, BodySizes sizes) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> size(std::log(static_cast<double>(sizes.median)), 0.6);
  std::vector<std::string> bodies;
  bodies.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const double wanted = std::clamp(size(rng), static_cast<double>(sizes.min),
                                     static_cast<double>(sizes.max));
    bodies.push_back(bodyOfSize(rng, static_cast<size_t>(wanted)));
  }
  return bodies;
}

}  // namespace webhooker::bench
