// TargetType: what kind of receiver a target delivers to.
//
// The main DB stores it as TEXT ("http", "slack", "database", "log",
// "redis_stream", "nats", "amqp", "pull"; a CHECK constraint lists them); the same
// words are the admin API's, the CLI's and the target_type metric label.
// Code passes the enum around and converts only where the text is read or
// written: inside storage/, where the API and the CLI parse or print it, and
// where a metric label is made.
#pragma once

#include <optional>
#include <string_view>

namespace webhooker {

enum class TargetType { kHttp, kSlack, kDatabase, kLog, kRedisStream, kNats, kAmqp, kPull };

inline constexpr TargetType kTargetTypes[] = {
    TargetType::kHttp, TargetType::kSlack, TargetType::kDatabase, TargetType::kLog,
    TargetType::kRedisStream, TargetType::kNats, TargetType::kAmqp, TargetType::kPull};

// The stored and shown word (not named toString: doctest finds that name by
// argument-dependent lookup).
constexpr std::string_view targetTypeWord(TargetType type) {
  switch (type) {
    case TargetType::kHttp: return "http";
    case TargetType::kSlack: return "slack";
    case TargetType::kDatabase: return "database";
    case TargetType::kLog: return "log";
    case TargetType::kRedisStream: return "redis_stream";
    case TargetType::kNats: return "nats";
    case TargetType::kAmqp: return "amqp";
    case TargetType::kPull: return "pull";
  }
  return "http";  // not reached: the switch names every type
}

// nullopt for a word that is no type (the words are case-sensitive).
constexpr std::optional<TargetType> parseTargetType(std::string_view text) {
  for (TargetType t : kTargetTypes)
    if (targetTypeWord(t) == text) return t;
  return std::nullopt;
}

// The types that publish to a message broker (targets/queue_config.h).
constexpr bool isQueueTargetType(TargetType type) {
  return type == TargetType::kRedisStream || type == TargetType::kNats ||
         type == TargetType::kAmqp;
}

// The types that send an HTTP request to a URL.
constexpr bool isHttpTargetType(TargetType type) {
  return type == TargetType::kHttp || type == TargetType::kSlack;
}

}  // namespace webhooker
