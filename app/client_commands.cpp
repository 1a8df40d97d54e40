// Management commands: each leaf command turns its arguments into one admin
// API call, performs it with performCall() and shows the answer with a
// renderer (app/cli_output.h: a table, pretty JSON, or "deleted <id>").
#include "app/client_commands.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "app/admin_client.h"
#include "app/cli_output.h"
#include "base/uuid.h"
#include "storage/target_type.h"

namespace webhooker::app {

namespace {

using nlohmann::json;

constexpr const char* kDefaultUrl = "http://127.0.0.1:8080";
constexpr const char* kApiPrefix = "/api/v1";
constexpr auto kTimeout = std::chrono::seconds(10);
constexpr const char* kCommonHelp =
    "Every command also takes --url URL (the daemon; env WEBHOOKER_URL, default "
    "http://127.0.0.1:8080) and --json (print the API's answer as it is).\n"
    "The admin token comes from the WEBHOOKER_TOKEN environment variable only (the daemon\n"
    "sets it from WEBHOOKER_ADMIN_TOKEN, or prints a generated one on its first start).";

// Everything the parse fills in. Only one leaf command runs per process, so
// all of them share one Session: their positionals and body options write
// into the same fields.
struct Session {
  explicit Session(int& code) : exitCode(code) {}

  std::string urlFlag;         // "" → WEBHOOKER_URL → kDefaultUrl
  bool rawJson = false;
  std::string webhookId;
  std::string childId;         // entrypoint, target, event or delivery id
  json body = json::object();  // only the fields the user gave
  std::vector<std::pair<std::string, std::string>> query;  // only the parameters given
  std::vector<std::string> targetRefs;  // --target values: ids or names
  std::vector<std::string> targetIds;   // the same as ids, once resolved
  int& exitCode;
};
using SessionPtr = std::shared_ptr<Session>;

struct ApiCall {
  std::string method;
  std::string path;  // below /api/v1
  std::optional<json> body;
};

using cli::cellText;
using cli::field;
using cli::fieldColumn;
using cli::integerField;
using cli::plural;
using cli::printTable;
using cli::Render;  // not called with --json
using cli::showObject;
using cli::targetCell;

// --- HTTP -----------------------------------------------------------------

// Resolved here rather than with CLI11's envname: CLI11 also applies env
// variables to subcommands that did not run, and the three groups share
// Session::urlFlag, so an unparsed group would overwrite the given flag.
std::string daemonUrl(const Session& session) {
  if (!session.urlFlag.empty()) return session.urlFlag;
  const char* env = std::getenv("WEBHOOKER_URL");
  return env && *env ? env : kDefaultUrl;
}

std::optional<std::string> tokenFromEnvironment() {
  const char* token = std::getenv("WEBHOOKER_TOKEN");
  if (token && *token) return std::string(token);
  std::cerr << "webhooker: WEBHOOKER_TOKEN is not set. Set it to the admin token the daemon "
               "printed on its first start (or that `webhooker admin-token --reset` printed):\n"
               "  export WEBHOOKER_TOKEN=whk_...\n";
  return std::nullopt;
}

// The daemon's answer, whatever its status; nullopt (said on stderr) when
// there is none (no token, bad URL, unreachable daemon).
std::optional<AdminAnswer> sendCall(const Session& session, const ApiCall& call) {
  const auto token = tokenFromEnvironment();
  if (!token) return std::nullopt;
  const auto client = AdminClient::forUrl(daemonUrl(session), *token, kTimeout);
  if (!client) {
    std::cerr << "webhooker: --url: " << client.error().message << "\n";
    return std::nullopt;
  }
  auto answer = client.value().sendJson(call.method, kApiPrefix + call.path, call.body);
  if (!answer) {
    std::cerr << "webhooker: " << answer.error().message
              << "\n  The daemon's address is set with --url or WEBHOOKER_URL.\n";
    return std::nullopt;
  }
  return std::move(answer.value());
}

// A successful answer's body, or nullopt after saying on stderr why not.
std::optional<std::string> successBody(const AdminAnswer& answer) {
  if (!answer.ok()) {
    const bool fromApi = answer.json().contains("error");
    std::cerr << "webhooker: " << answer.errorText()
              << (fromApi ? "" : "; is --url pointing at a webhooker daemon?") << "\n";
    return std::nullopt;
  }
  return answer.body;
}

// The successful response's body, or nullopt after printing why there is
// none (no token, bad URL, unreachable daemon, an error answer).
std::optional<std::string> performCall(const Session& session, const ApiCall& call) {
  const auto answer = sendCall(session, call);
  if (!answer) return std::nullopt;
  return successBody(*answer);
}

Render showDeleted(const SessionPtr& s, std::string Session::*id) {
  return [s, id](const json&) { std::cout << "deleted " << (*s).*id << "\n"; };
}

// --- Command building -----------------------------------------------------

// --target takes a target's name as well as its id (the tables show names):
// names are looked up among the webhook's targets and must name exactly one.
bool resolveTargets(Session& session) {
  session.targetIds.clear();
  json targets;
  for (const std::string& ref : session.targetRefs) {
    if (isUuid(ref)) {
      session.targetIds.push_back(ref);
      continue;
    }
    if (targets.is_null()) {
      const auto body = performCall(
          session, {"GET", "/webhooks/" + pathSegment(session.webhookId) + "/targets", {}});
      if (!body) return false;
      targets = field(json::parse(*body, nullptr, false), "targets");
      if (!targets.is_array()) targets = json::array();
    }
    std::vector<std::string> ids;
    for (const json& t : targets)
      if (field(t, "name") == ref) ids.push_back(cellText(field(t, "id")));
    if (ids.size() != 1) {
      std::cerr << "webhooker: --target " << ref << ": "
                << (ids.empty() ? "no target of this webhook has that name or id"
                                : std::to_string(ids.size()) +
                                      " targets have that name; give the id instead")
                << "\n";
      return false;
    }
    session.targetIds.push_back(ids.front());
  }
  return true;
}

// Resolves --target, performs the call, prints the answer (raw with --json)
// and sets the exit code.
void runCall(Session& session, const std::function<ApiCall()>& makeCall, const Render& render) {
  session.exitCode = 1;
  if (!resolveTargets(session)) return;
  const auto body = performCall(session, makeCall());
  if (!body) return;
  if (session.rawJson) {
    std::cout << *body;
    if (!body->empty() && body->back() != '\n') std::cout << "\n";
    session.exitCode = 0;
    return;
  }
  json answer;  // a 204 has no body: null
  if (!body->empty()) {
    answer = json::parse(*body, nullptr, false);
    if (answer.is_discarded()) {
      std::cerr << "webhooker: the daemon's answer is not JSON\n";
      return;
    }
  }
  session.exitCode = 0;  // a renderer that makes calls of its own sets 1 when one fails
  render(answer);
}

// --url and --json, which every call takes.
void addSharedOptions(CLI::App& cmd, const SessionPtr& s) {
  cmd.add_option("--url", s->urlFlag,
                 std::string("the daemon's address [env: WEBHOOKER_URL, default: ") +
                     kDefaultUrl + "]");
  cmd.add_flag("--json", s->rawJson, "print the API's JSON answer as it is");
  // Leaves copy this footer when added, so their --help names the shared
  // options too.
  cmd.footer(kCommonHelp);
}

// A group (`webhooks`, ...) carries the options every call shares; its
// leaves fall through to it, so `--url`/`--json` may follow the verb.
CLI::App& addGroup(CLI::App& app, const SessionPtr& s, const std::string& name,
                   const std::string& description) {
  CLI::App* group = app.add_subcommand(name, description);
  group->require_subcommand(1);
  addSharedOptions(*group, s);
  return *group;
}

CLI::App& addLeaf(CLI::App& group, const SessionPtr& s, const std::string& name,
                  const std::string& description, std::function<ApiCall()> makeCall,
                  Render render) {
  CLI::App* leaf = group.add_subcommand(name, description);
  leaf->fallthrough();
  leaf->callback([s, makeCall = std::move(makeCall), render = std::move(render)] {
    runCall(*s, makeCall, render);
  });
  return *leaf;
}

// The daemon takes a webhook's or a target's name wherever it takes its id.
void addWebhookIdArg(CLI::App& cmd, const SessionPtr& s) {
  cmd.add_option("WEBHOOK", s->webhookId, "the webhook's id or name")->required();
}

// `noun` "target" → TARGET, "the target's id or name"; "event" → EVENT_ID,
// "the event's id" (only webhooks, targets and entrypoints have names).
void addChildIdArg(CLI::App& cmd, const SessionPtr& s, const std::string& noun) {
  std::string name;
  for (const char c : noun) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const bool named = noun == "target" || noun == "entrypoint";
  cmd.add_option(named ? name : name + "_ID", s->childId,
                 "the " + noun + "'s id" + (named ? " or name" : ""))
      ->required();
}

std::string webhookPath(const Session& s) { return "/webhooks/" + pathSegment(s.webhookId); }

// `path` with the query parameters the user gave, each value escaped.
std::string withQuery(std::string path, const Session& s) {
  char separator = '?';
  auto add = [&](const std::string& name, const std::string& value) {
    path += separator + name + "=" + pathSegment(value);
    separator = '&';
  };
  for (const auto& [name, value] : s.query) add(name, value);
  for (const std::string& id : s.targetIds) add("target_id", id);
  return path;
}

std::string childPath(const Session& s, const char* collection) {
  return webhookPath(s) + "/" + collection + "/" + pathSegment(s.childId);
}

// A body option: when given, `key` (a path into the body such as
// "/config/url") is set to its value. Absent options send nothing.
template <typename T>
CLI::Option* addBodyOption(CLI::App& cmd, const SessionPtr& s, const std::string& flag,
                           const char* key, const std::string& help) {
  return cmd.add_option_function<T>(
      flag, [s, key](const T& value) { s->body[json::json_pointer(key)] = value; }, help);
}

// A secret option. A secret on the command line is visible to every user of
// the host (ps, /proc/<pid>/cmdline), so "-" reads it from standard input.
void addSecretOption(CLI::App& cmd, const SessionPtr& s, const std::string& flag,
                     const char* key, const std::string& help) {
  cmd.add_option_function<std::string>(
      flag,
      [s, flag, key](const std::string& value) {
        std::string secret = value;
        if (value == "-" && !std::getline(std::cin, secret))
          throw CLI::ValidationError(flag, "nothing to read on standard input");
        s->body[json::json_pointer(key)] = secret;
      },
      help);
}

// --verify SCHEME [--verify-secret S] and the rest of an entrypoint's
// inbound settings (docs/providers.md): how it checks its sender, its
// provider's handshake and its answer.
void addVerificationOptions(CLI::App& cmd, const SessionPtr& s, bool required) {
  auto* scheme = addBodyOption<std::string>(
      cmd, s, "--verify", "/verification/scheme",
      "how requests are verified: none, custom or a preset (github, stripe, standard, shopify, "
      "slack, twilio, zoom, linear, paddle, gitlab, meta, twitter, dropbox)");
  if (required) scheme->required();
  addSecretOption(cmd, s, "--verify-secret", "/verification/secret",
                  "the sender's signing secret (write-only), or - to read it from standard input");
  addSecretOption(cmd, s, "--verify-previous-secret", "/verification/previous_secret",
                  "a secret being rotated out, still honoured beside --verify-secret");
  addBodyOption<std::string>(cmd, s, "--verify-public-url", "/verification/public_url",
                             "the scheme, host and path prefix senders call (schemes that sign "
                             "the URL: twilio, custom with {url})");
  addBodyOption<int64_t>(cmd, s, "--verify-tolerance", "/verification/tolerance_seconds",
                         "seconds a signature's timestamp may be off (default 300)");
  for (const auto& [flag, key, help] :
       {std::tuple{"--verify-header", "/verification/header", "custom: the signature's header"},
        {"--verify-prefix", "/verification/prefix", "custom: before the signature (sha256=)"},
        {"--verify-algorithm", "/verification/algorithm",
         "custom: hmac-sha1, hmac-sha256, hmac-sha512, token or basic"},
        {"--verify-encoding", "/verification/encoding", "custom: hex or base64"},
        {"--verify-content", "/verification/content",
         "custom: what is signed, e.g. {timestamp}.{body}"},
        {"--verify-timestamp-header", "/verification/timestamp_header",
         "custom: the timestamp's header"}})
    addBodyOption<std::string>(cmd, s, flag, key, help);
  addBodyOption<std::string>(cmd, s, "--handshake", "/handshake/kind",
                             "answer the provider's handshake: slack, meta, zoom, twitter or "
                             "dropbox (the scheme of the same name)");
  addSecretOption(cmd, s, "--handshake-token", "/handshake/verify_token",
                  "meta: the verify token (write-only), or - to read it from standard input");
  addBodyOption<int64_t>(cmd, s, "--response-status", "/response/status",
                         "answer stored events with this status (200-299)");
  addBodyOption<std::string>(cmd, s, "--response-type", "/response/content_type",
                             "the custom answer's Content-Type");
  addBodyOption<std::string>(cmd, s, "--response-body", "/response/body", "the custom answer's body");
}

// --verify-previous-secret: the API takes the secrets as one list, newest
// first.
json inboundBody(json body) {
  if (!body.contains("verification") || !body["verification"].contains("previous_secret"))
    return body;
  json& v = body["verification"];
  json secrets = json::array();
  if (v.contains("secret")) secrets.push_back(v["secret"]);
  secrets.push_back(v["previous_secret"]);
  v.erase("secret");
  v.erase("previous_secret");
  v["secrets"] = secrets;
  return body;
}

// How an entrypoint finds an event's type: one of three rules, or (not on
// create, where it is the default already) back to the default.
void addEventTypeOptions(CLI::App& cmd, const SessionPtr& s, bool create) {
  auto* header = addBodyOption<std::string>(cmd, s, "--event-type-header", "/event_type/header",
                                            "the event type is this request header's value");
  auto* pointer = addBodyOption<std::string>(
      cmd, s, "--event-type-pointer", "/event_type/json_pointer",
      "the event type is the string at this JSON pointer of the body (/type)");
  auto* jq = addBodyOption<std::string>(
      cmd, s, "--event-type-jq", "/event_type/jq",
      "the event type is this jq expression's string, over {event_type, headers, body, "
      "received_at}");
  std::vector<CLI::Option*> rules = {header, pointer, jq};
  if (!create)
    rules.push_back(cmd.add_flag_callback(
        "--default-event-type", [s] { s->body["event_type"] = nullptr; },
        "back to the default: X-GitHub-Event, then the JSON body's \"type\""));
  for (CLI::Option* a : rules)
    for (CLI::Option* b : rules)
      if (a != b) a->excludes(b);
}

// A target's subscription, transformation and rate limit; the --no-* flags
// undo one on update (a new target has none).
void addRoutingOptions(CLI::App& cmd, const SessionPtr& s, bool create) {
  addBodyOption<std::vector<std::string>>(
      cmd, s, "--event-types", "/filter/event_types",
      "only events of these types: name, prefix.* or * (repeatable; replaces the list)")
      ->delimiter(',');
  addBodyOption<std::string>(cmd, s, "--filter-jq", "/filter/jq",
                             "only events for which this jq expression is true");
  addBodyOption<std::string>(cmd, s, "--transform-jq", "/transform/jq",
                             "send this jq program's output (JSON) instead of the body received");
  addBodyOption<double>(cmd, s, "--rate-limit", "/rate_limit/per_second",
                        "deliveries per second at most (0.01 to 10000)");
  if (create) return;
  cmd.add_flag_callback("--no-filter", [s] { s->body["filter"] = nullptr; },
                        "every event again");
  cmd.add_flag_callback("--no-transform", [s] { s->body["transform"] = nullptr; },
                        "send the body as received again");
  cmd.add_flag_callback("--no-rate-limit", [s] { s->body["rate_limit"] = nullptr; },
                        "no rate limit");
}

// "Name: value" → config.headers.Name = "value"; repeatable.
void addHeaderOption(CLI::App& cmd, const SessionPtr& s) {
  auto isHeader = [](const std::string& text) -> std::string {
    const size_t colon = text.find(':');
    if (colon == std::string::npos || colon == 0) return "expected 'Name: value'";
    return {};
  };
  cmd.add_option_function<std::vector<std::string>>(
         "--header",
         [s](const std::vector<std::string>& headers) {
           for (const std::string& h : headers) {
             const size_t colon = h.find(':');
             const size_t valueStart = h.find_first_not_of(" \t", colon + 1);
             s->body["config"]["headers"][h.substr(0, colon)] =
                 valueStart == std::string::npos ? "" : h.substr(valueStart);
           }
         },
         "an HTTP header sent with every delivery, 'Name: value' (repeatable)")
      ->check(CLI::Validator(isHeader, "'Name: value'"));
}

void addWebhookFields(CLI::App& cmd, const SessionPtr& s, bool create) {
  auto* name = addBodyOption<std::string>(cmd, s, "--name", "/name", "the webhook's name");
  if (create) name->required();
  addBodyOption<std::string>(cmd, s, "--description", "/description", "a description");
  addBodyOption<int64_t>(cmd, s, "--retention-days", "/retention_days",
                         "days events are kept (server default 30)");
  addBodyOption<int64_t>(cmd, s, "--max-events", "/max_events",
                         "events kept at most; the oldest finished go first "
                         "(server default 100000)");
  addBodyOption<std::vector<std::string>>(
      cmd, s, "--mask", "/mask_pointers",
      "a JSON pointer (/user/email) whose value is stored as \"[masked]\" once the event's "
      "deliveries are final (repeatable; replaces the list)");
  if (!create)
    cmd.add_flag_callback("--no-masks", [s] { s->body["mask_pointers"] = json::array(); },
                          "mask nothing in events that finish from now on");
}

// Endpoint health: ordering, when the engine disables it, auto-resume (off
// on a new target: --no-auto-resume only on update).
void addTargetHealthFields(CLI::App& cmd, const SessionPtr& s, bool create) {
  addBodyOption<std::string>(cmd, s, "--ordering", "/ordering",
                             "parallel (default) or fifo: one at a time, in the order received");
  addBodyOption<int64_t>(cmd, s, "--disable-after-ms", "/disable_after",
                         "disable it after this long without a successful attempt (default 5 days)");
  cmd.add_flag_callback("--auto-resume", [s] { s->body["auto_resume"] = true; },
                        "probe it while disabled for failing, and enable it when a probe succeeds");
  if (!create)
    cmd.add_flag_callback("--no-auto-resume", [s] { s->body["auto_resume"] = false; },
                          "leave enabling it to an operator");
  addBodyOption<int64_t>(cmd, s, "--probe-interval-ms", "/probe_interval",
                         "how often an auto-resume probe is sent (default 1 h)");
}

// The fields `targets create` and `targets update` share.
void addTargetFields(CLI::App& cmd, const SessionPtr& s, bool create) {
  auto* name = addBodyOption<std::string>(cmd, s, "--name", "/name", "the target's name");
  // A target's type is fixed once it exists.
  if (create) {
    name->required();
    addBodyOption<std::string>(cmd, s, "--type", "/type",
                               "http, slack, database, log, redis_stream, nats, amqp or pull")
        ->required();
  }
  addBodyOption<std::string>(cmd, s, "--target-url", "/config/url",
                             "http: the URL deliveries go to; redis_stream, nats, amqp: the "
                             "broker's URL (redis://, nats://, tls://, amqp://, amqps://)");
  addBodyOption<std::string>(cmd, s, "--method", "/config/method", "http: the method (POST)");
  addHeaderOption(cmd, s);
  addBodyOption<int64_t>(cmd, s, "--timeout-ms", "/config/timeout_ms", "http: per-attempt timeout");
  addSecretOption(cmd, s, "--signing-secret", "/config/signing_secret",
                  "http: secret for the signature header (write-only): whsec_..., "
                  "\"generate\" for a new one shown once, or - to read it from standard input");
  addBodyOption<std::string>(cmd, s, "--webhook-url", "/config/webhook_url",
                             "slack: the incoming-webhook URL");
  addBodyOption<std::string>(cmd, s, "--stream", "/config/stream", "redis_stream: the stream");
  addBodyOption<int64_t>(cmd, s, "--maxlen", "/config/maxlen",
                         "redis_stream: trim the stream to about this many entries");
  addBodyOption<std::string>(cmd, s, "--subject", "/config/subject",
                             "nats: the JetStream subject ({type}: the event type)");
  addBodyOption<std::string>(cmd, s, "--exchange", "/config/exchange", "amqp: the exchange");
  addBodyOption<std::string>(cmd, s, "--routing-key", "/config/routing_key",
                             "amqp: the routing key ({type}: the event type)");
  addBodyOption<std::string>(cmd, s, "--broker-username", "/config/username",
                             "redis_stream, nats, amqp: the user name (write-only)");
  addSecretOption(cmd, s, "--broker-password", "/config/password",
                  "redis_stream, nats, amqp: the password (write-only), or - to read it from "
                  "standard input");
  addBodyOption<int64_t>(cmd, s, "--max-concurrency", "/max_concurrency",
                         "deliveries in flight at once");
  addBodyOption<int64_t>(cmd, s, "--max-retries", "/retry/max_retries",
                         "retries after the first attempt");
  addBodyOption<int64_t>(cmd, s, "--base-delay-ms", "/retry/base_delay_ms", "first retry delay");
  addBodyOption<int64_t>(cmd, s, "--max-delay-ms", "/retry/max_delay_ms", "longest retry delay");
  addRoutingOptions(cmd, s, create);
  cmd.add_flag_callback("--inactive", [s] { s->body["active"] = false; },
                        "deliver nothing to it until activated");
  addTargetHealthFields(cmd, s, create);
}

// `activate` and `deactivate` for entrypoints or targets: PATCH {"active"}.
void addActivation(CLI::App& group, const SessionPtr& s, const char* collection,
                   const std::string& noun) {
  for (const bool active : {true, false}) {
    const std::string verb = active ? "activate" : "deactivate";
    auto& cmd = addLeaf(
        group, s, verb, verb + " a " + noun,
        [s, collection, active] {
          return ApiCall{"PATCH", childPath(*s, collection), json{{"active", active}}};
        },
        showObject);
    addWebhookIdArg(cmd, s);
    addChildIdArg(cmd, s, noun);
  }
}

// A query option: when given, `?name=value` is sent.
CLI::Option* addQueryOption(CLI::App& cmd, const SessionPtr& s, const std::string& flag,
                            const char* name, const std::string& help) {
  return cmd.add_option_function<std::string>(
      flag, [s, name](const std::string& value) { s->query.emplace_back(name, value); }, help);
}

// --limit and --cursor, as every paged listing takes them.
void addPageOptions(CLI::App& cmd, const SessionPtr& s) {
  addQueryOption(cmd, s, "--limit", "limit", "rows per page (default 50, at most 500)")
      ->type_name("INT")
      ->check(CLI::Range(1, 500));
  addQueryOption(cmd, s, "--cursor", "cursor", "the page after the one that printed it");
}

void addWebhookCommands(CLI::App& app, const SessionPtr& s) {
  auto& group = addGroup(app, s, "webhooks", "manage webhooks (via the admin API)");
  auto& list = addLeaf(
      group, s, "list", "list webhooks, oldest first, a page at a time",
      [s] { return ApiCall{"GET", withQuery("/webhooks", *s), {}}; },
      cli::showPage("webhooks", cli::webhookColumns()));
  addPageOptions(list, s);
  auto& create = addLeaf(
      group, s, "create", "create a webhook with its first entrypoint",
      [s] { return ApiCall{"POST", "/webhooks", s->body}; }, showObject);
  addWebhookFields(create, s, true);
  auto& show = addLeaf(
      group, s, "show", "show one webhook",
      [s] { return ApiCall{"GET", webhookPath(*s), {}}; }, showObject);
  addWebhookIdArg(show, s);
  auto& update = addLeaf(
      group, s, "update", "change a webhook's fields",
      [s] { return ApiCall{"PATCH", webhookPath(*s), s->body}; }, showObject);
  addWebhookIdArg(update, s);
  addWebhookFields(update, s, false);
  auto& remove = addLeaf(
      group, s, "delete", "delete a webhook, its targets and all its events",
      [s] { return ApiCall{"DELETE", webhookPath(*s), {}}; }, showDeleted(s, &Session::webhookId));
  addWebhookIdArg(remove, s);
}

void addEntrypointCommands(CLI::App& app, const SessionPtr& s) {
  auto& group = addGroup(app, s, "entrypoints", "manage a webhook's entrypoints (ingest URLs)");
  auto& list = addLeaf(
      group, s, "list", "list a webhook's entrypoints",
      [s] { return ApiCall{"GET", webhookPath(*s) + "/entrypoints", {}}; },
      cli::showTable("entrypoints", cli::entrypointColumns()));
  addWebhookIdArg(list, s);
  auto& create = addLeaf(
      group, s, "create", "add an entrypoint to a webhook",
      [s] { return ApiCall{"POST", webhookPath(*s) + "/entrypoints", inboundBody(s->body)}; },
      showObject);
  addWebhookIdArg(create, s);
  addBodyOption<std::string>(create, s, "--name", "/name",
                             "its name, unique within the webhook (default: ep- and the start "
                             "of its id)");
  addVerificationOptions(create, s, false);
  addEventTypeOptions(create, s, true);
  create.add_flag_callback("--inactive", [s] { s->body["active"] = false; },
                           "accept nothing on it (410) until activated");
  addActivation(group, s, "entrypoints", "entrypoint");
  auto& rename = addLeaf(
      group, s, "rename", "give an entrypoint another name",
      [s] { return ApiCall{"PATCH", childPath(*s, "entrypoints"), s->body}; }, showObject);
  addWebhookIdArg(rename, s);
  addChildIdArg(rename, s, "entrypoint");
  addBodyOption<std::string>(rename, s, "--name", "/name",
                             "the new name, unique within the webhook")
      ->required();
  auto& verify = addLeaf(
      group, s, "verify", "set how an entrypoint verifies its sender's signature",
      [s] { return ApiCall{"PATCH", childPath(*s, "entrypoints"), inboundBody(s->body)}; },
      showObject);
  addWebhookIdArg(verify, s);
  addChildIdArg(verify, s, "entrypoint");
  addVerificationOptions(verify, s, true);
  auto& update = addLeaf(
      group, s, "update", "change an entrypoint's verification, handshake or response",
      [s] { return ApiCall{"PATCH", childPath(*s, "entrypoints"), inboundBody(s->body)}; },
      showObject);
  addWebhookIdArg(update, s);
  addChildIdArg(update, s, "entrypoint");
  addVerificationOptions(update, s, false);
  update.add_flag_callback("--no-handshake", [s] { s->body["handshake"] = nullptr; },
                           "stop answering the provider's handshake");
  update.add_flag_callback("--default-response", [s] { s->body["response"] = nullptr; },
                           "answer with webhooker's own JSON again");
  auto& typing = addLeaf(
      group, s, "event-type", "set how an entrypoint finds the type of its events",
      [s] { return ApiCall{"PATCH", childPath(*s, "entrypoints"), s->body}; }, showObject);
  addWebhookIdArg(typing, s);
  addChildIdArg(typing, s, "entrypoint");
  addEventTypeOptions(typing, s, false);
  auto& remove = addLeaf(
      group, s, "delete", "delete an entrypoint",
      [s] { return ApiCall{"DELETE", childPath(*s, "entrypoints"), {}}; },
      showDeleted(s, &Session::childId));
  addWebhookIdArg(remove, s);
  addChildIdArg(remove, s, "entrypoint");
}

// --url is the daemon's address everywhere. A target command given --url
// and no URL for the target most likely meant the target's (--url once
// was its spelling here): refused rather than sent to that address.
void refuseUrlMeantForTarget(const Session& s, bool create) {
  if (s.urlFlag.empty()) return;
  const json config = field(s.body, "config");
  if (field(config, "url").is_string() || field(config, "webhook_url").is_string()) return;
  const json word = field(s.body, "type");
  const std::optional<TargetType> type =
      word.is_string() ? parseTargetType(word.get<std::string>()) : std::nullopt;
  const bool needsUrl =
      create ? type && (isHttpTargetType(*type) || isQueueTargetType(*type)) : s.body.empty();
  if (needsUrl)
    throw CLI::ValidationError("--url", "is the daemon's address (" + s.urlFlag +
                                            "); give the target's URL with --target-url (http) "
                                            "or --webhook-url (slack)");
}

// A webhook's stats answer (GET .../stats), or nullopt after printing why
// there is none.
std::optional<json> webhookStats(const Session& s, const std::string& webhookRef) {
  const auto body = performCall(s, {"GET", "/webhooks/" + pathSegment(webhookRef) + "/stats", {}});
  if (!body) return std::nullopt;
  json stats = json::parse(*body, nullptr, false);
  if (stats.is_discarded()) {
    std::cerr << "webhooker: the daemon's answer is not JSON\n";
    return std::nullopt;
  }
  return stats;
}

// Each target with its entry of the stats answer under "stats" (null for a
// target created since), so the columns below read both.
json withStats(json targets, const json& stats) {
  if (!targets.is_array()) return json::array();
  const json entries = field(stats, "targets");
  for (json& t : targets) {
    t["stats"] = json();
    if (entries.is_array())
      for (const json& e : entries)
        if (field(e, "target_id") == field(t, "id")) t["stats"] = e;
  }
  return targets;
}

// Renders that need the stats call too: a failed one fails the command.
Render withTargetStats(const SessionPtr& s, std::function<void(const json& targets)> show) {
  return [s, show = std::move(show)](const json& answer) {
    const auto stats = webhookStats(*s, s->webhookId);
    if (!stats) {
      s->exitCode = 1;
      return;
    }
    const bool list = answer.contains("targets");
    const json joined = withStats(list ? answer["targets"] : json::array({answer}), *stats);
    show(list ? joined : joined[0]);
  };
}

// `targets lease|ack|nack|extend`: a pull target's consumer, printing the
// API's JSON (the lease token included: it is what ack, nack and extend take).
void addPullCommands(CLI::App& group, const SessionPtr& s) {
  const Render printJson = [](const json& answer) { std::cout << answer.dump(2) << "\n"; };
  auto& lease = addLeaf(
      group, s, "lease", "lease a pull target's waiting deliveries (bodies and a lease token)",
      [s] { return ApiCall{"POST", childPath(*s, "targets") + "/lease", s->body}; }, printJson);
  addWebhookIdArg(lease, s);
  addChildIdArg(lease, s, "target");
  addBodyOption<int64_t>(lease, s, "--count", "/count", "at most this many (1-100, default 10)");
  addBodyOption<int64_t>(lease, s, "--lease-seconds", "/lease_seconds",
                         "how long they are held (1-3600, default 30)");
  for (const auto& [verb, help] :
       {std::pair{"ack", "a leased delivery was handled: delivered"},
        {"nack", "a leased delivery failed: retried later (an attempt), or dead-lettered"},
        {"extend", "hold leased deliveries longer"}}) {
    const std::string path = std::string("/") + verb;
    auto& leaf = addLeaf(
        group, s, verb, help,
        [s, path] { return ApiCall{"POST", childPath(*s, "targets") + path, s->body}; },
        printJson);
    addWebhookIdArg(leaf, s);
    addChildIdArg(leaf, s, "target");
    addBodyOption<std::vector<std::string>>(leaf, s, "IDS", "/ids", "the delivery ids")
        ->required();
    addSecretOption(leaf, s, "--lease", "/lease",
                    "the lease token (whl_...), or - to read it from standard input");
    leaf.get_option("--lease")->required();
    if (path == "/nack")
      addBodyOption<int64_t>(leaf, s, "--delay-seconds", "/delay_seconds",
                             "offer it again after this long (default: the target's backoff)");
    if (path == "/extend")
      addBodyOption<int64_t>(leaf, s, "--lease-seconds", "/lease_seconds",
                             "hold them this long from now (1-3600, default 30)");
  }
}

void addTargetCommands(CLI::App& app, const SessionPtr& s) {
  auto& group = addGroup(app, s, "targets", "manage a webhook's delivery targets");
  auto& list = addLeaf(
      group, s, "list", "list a webhook's targets with their state, breaker and backlog",
      [s] { return ApiCall{"GET", webhookPath(*s) + "/targets", {}}; },
      withTargetStats(s, [](const json& targets) { printTable(targets, cli::targetColumns()); }));
  addWebhookIdArg(list, s);
  auto& create = addLeaf(
      group, s, "create", "add a target to a webhook",
      [s] {
        refuseUrlMeantForTarget(*s, true);
        return ApiCall{"POST", webhookPath(*s) + "/targets", s->body};
      },
      showObject);
  addWebhookIdArg(create, s);
  addTargetFields(create, s, true);
  auto& show = addLeaf(
      group, s, "show", "show one target (secrets redacted) with its state, breaker and backlog",
      [s] { return ApiCall{"GET", childPath(*s, "targets"), {}}; },
      withTargetStats(s, cli::showTargetWithHealth));
  addWebhookIdArg(show, s);
  addChildIdArg(show, s, "target");
  auto& update = addLeaf(
      group, s, "update", "change a target's fields (config is merged)",
      [s] {
        refuseUrlMeantForTarget(*s, false);
        return ApiCall{"PATCH", childPath(*s, "targets"), s->body};
      },
      showObject);
  addWebhookIdArg(update, s);
  addChildIdArg(update, s, "target");
  addTargetFields(update, s, false);
  addActivation(group, s, "targets", "target");
  // Activating is also how a target the engine disabled is enabled again.
  group.get_subcommand("activate")->alias("enable");
  auto& remove = addLeaf(
      group, s, "delete", "delete a target",
      [s] { return ApiCall{"DELETE", childPath(*s, "targets"), {}}; },
      showDeleted(s, &Session::childId));
  addWebhookIdArg(remove, s);
  addChildIdArg(remove, s, "target");
  addPullCommands(group, s);
}

// `operational-webhook set|show|remove`: where operational events go.
void addOperationalWebhookCommands(CLI::App& app, const SessionPtr& s) {
  const std::string path = "/settings/operational-webhook";
  auto& group = addGroup(app, s, "operational-webhook",
                         "where target.disabled, breaker and dead-letter events are sent");
  auto& set = addLeaf(
      group, s, "set", "send operational events to a URL, signed (Standard Webhooks)",
      [s, path] { return ApiCall{"PUT", path, s->body}; }, showObject);
  addBodyOption<std::string>(set, s, "--target-url", "/url", "where the events go")->required();
  addSecretOption(set, s, "--signing-secret", "/signing_secret",
                  "whsec_..., \"generate\" for a new one shown once, or - to read it from "
                  "standard input (required the first time)");
  addBodyOption<std::vector<std::string>>(
      set, s, "--event-type", "/event_types",
      "target.disabled, target.enabled, target.breaker_opened, target.breaker_closed or "
      "delivery.dead_lettered (repeatable; default all)");
  addLeaf(group, s, "show", "show the setting (the secret redacted)",
          [path] { return ApiCall{"GET", path, {}}; }, showObject);
  addLeaf(group, s, "remove", "stop sending operational events (the history stays)",
          [path] { return ApiCall{"DELETE", path, {}}; },
          [](const json&) { std::cout << "operational webhook removed\n"; });
}

// `tokens create|list|revoke`: tokens that reach one webhook's routes
// within a scope (docs/security.md, *Access model*); the admin token only.
void addTokenCommands(CLI::App& app, const SessionPtr& s) {
  auto& group = addGroup(app, s, "tokens", "tokens that reach one webhook (admin token only)");
  auto& create = addLeaf(
      group, s, "create", "make a token for one webhook; its value is shown this once",
      [s] { return ApiCall{"POST", webhookPath(*s) + "/tokens", s->body}; },
      [](const json& answer) {
        std::cout << cellText(field(answer, "token")) << "\n";
        std::cerr << "token " << cellText(field(answer, "id"))
                  << " made; its value above is shown only now (only its hash is kept)\n";
      });
  addWebhookIdArg(create, s);
  addBodyOption<std::string>(create, s, "--name", "/name", "what the token is for")->required();
  create
      .add_option_function<std::string>(
          "--scope", [s](const std::string& scope) { s->body["scopes"] = json::array({scope}); },
          "read, operate or manage (each includes the ones before it)")
      ->required()
      ->check(CLI::IsMember({"read", "operate", "manage"}));
  addBodyOption<std::string>(create, s, "--expires-at", "/expires_at",
                             "when it stops working (ISO 8601, UTC); default: never");
  auto& list = addLeaf(
      group, s, "list", "list a webhook's tokens, revoked ones too (never their values)",
      [s] { return ApiCall{"GET", webhookPath(*s) + "/tokens", {}}; },
      cli::showTable("tokens", cli::tokenColumns()));
  addWebhookIdArg(list, s);
  auto& revoke = addLeaf(
      group, s, "revoke", "revoke a token: refused from its next request on",
      [s] { return ApiCall{"DELETE", childPath(*s, "tokens"), {}}; },
      [s](const json&) { std::cout << "revoked " << s->childId << "\n"; });
  addWebhookIdArg(revoke, s);
  addChildIdArg(revoke, s, "token");
}

// --- History and redrive --------------------------------------------------

// --target NAME_OR_ID, resolved to an id before the call.
void addTargetOption(CLI::App& cmd, const SessionPtr& s, const std::string& help,
                     bool repeatable) {
  if (repeatable) {
    cmd.add_option_function<std::vector<std::string>>(
        "--target",
        [s](const std::vector<std::string>& refs) {
          s->targetRefs.insert(s->targetRefs.end(), refs.begin(), refs.end());
        },
        help);
  } else {
    cmd.add_option_function<std::string>(
        "--target", [s](const std::string& ref) { s->targetRefs = {ref}; }, help);
  }
}

// The filters both listings take.
void addListOptions(CLI::App& cmd, const SessionPtr& s) {
  addQueryOption(cmd, s, "--status", "status", "pending, retrying, delivered or failed");
  addTargetOption(cmd, s, "only deliveries to this target, by name or id (events: with one)",
                  false);
  addQueryOption(cmd, s, "--since", "since", "received at or after this ISO-8601 time");
  addQueryOption(cmd, s, "--until", "until", "received before this ISO-8601 time");
  addQueryOption(cmd, s, "--event-type", "event_type",
                 "events of this type, or of every type starting with prefix. (prefix.*)");
  addPageOptions(cmd, s);
}

void addEventCommands(CLI::App& app, const SessionPtr& s) {
  auto& group = addGroup(app, s, "events", "a webhook's received events, newest first");
  auto& list = addLeaf(
      group, s, "list", "list events with the status of their deliveries",
      [s] { return ApiCall{"GET", withQuery(webhookPath(*s) + "/events", *s), {}}; },
      cli::showPage("events", cli::eventColumns()));
  addWebhookIdArg(list, s);
  addListOptions(list, s);
  auto& show = addLeaf(
      group, s, "show", "show one event: request, body, deliveries and every attempt",
      [s] { return ApiCall{"GET", childPath(*s, "events"), {}}; }, cli::showEvent);
  addWebhookIdArg(show, s);
  addChildIdArg(show, s, "event");
}

void addDeliveryCommands(CLI::App& app, const SessionPtr& s) {
  auto& group = addGroup(app, s, "deliveries",
                         "a webhook's deliveries; --status failed lists the dead letters");
  auto& list = addLeaf(
      group, s, "list", "list deliveries, newest first",
      [s] { return ApiCall{"GET", withQuery(webhookPath(*s) + "/deliveries", *s), {}}; },
      cli::showPage("deliveries", cli::deliveryColumns()));
  addWebhookIdArg(list, s);
  addListOptions(list, s);
  auto& retry = addLeaf(
      group, s, "retry", "retry a failed delivery with a fresh retry budget (its history stays)",
      [s] { return ApiCall{"POST", childPath(*s, "deliveries") + "/retry", json::object()}; },
      [](const json& d) {
        std::cout << "retrying delivery " << cellText(field(d, "id")) << " to "
                  << targetCell(d) << " (new attempt series after attempt "
                  << cellText(field(d, "series_start")) << ")\n";
      });
  addWebhookIdArg(retry, s);
  addChildIdArg(retry, s, "delivery");
}

// A command of its own (not in a group), with the shared options.
CLI::App& addTopLevelLeaf(CLI::App& app, const SessionPtr& s, const std::string& name,
                          const std::string& description, std::function<ApiCall()> makeCall,
                          Render render) {
  CLI::App* cmd = app.add_subcommand(name, description);
  addSharedOptions(*cmd, s);
  cmd->callback([s, makeCall = std::move(makeCall), render = std::move(render)] {
    runCall(*s, makeCall, render);
  });
  return *cmd;
}

void addRedriveCommands(CLI::App& app, const SessionPtr& s) {
  auto& redeliver = addTopLevelLeaf(
      app, s, "redeliver", "deliver a stored event again, as new deliveries",
      [s] {
        for (const std::string& id : s->targetIds) s->body["target_ids"].push_back(id);
        return ApiCall{"POST", childPath(*s, "events") + "/redeliver", s->body};
      },
      [](const json& answer) {
        const json deliveries = field(answer, "deliveries");
        std::cout << "created "
                  << plural(deliveries.is_array() ? static_cast<int64_t>(deliveries.size()) : 0,
                            "delivery", "deliveries")
                  << "\n";
        printTable(deliveries,
                   {fieldColumn("ID", "id"), {"TARGET", targetCell},
                    fieldColumn("TYPE", "target_type"), fieldColumn("STATUS", "status")});
      });
  addWebhookIdArg(redeliver, s);
  addChildIdArg(redeliver, s, "event");
  addTargetOption(redeliver, s,
                  "a target to deliver to, by name or id (repeatable; default: every active "
                  "target)",
                  true);

  auto& replay = addTopLevelLeaf(
      app, s, "replay",
      "deliver failed (or all finished) deliveries again, e.g. after a receiver's outage",
      [s] {
        if (!s->targetIds.empty()) s->body["target_id"] = s->targetIds.front();
        return ApiCall{"POST", webhookPath(*s) + "/replay", s->body};
      },
      [](const json& answer) {
        const json count = field(answer, "count");
        const int64_t n = count.is_number_integer() ? count.get<int64_t>() : 0;
        if (field(answer, "dry_run") == true)
          std::cout << plural(n, "delivery", "deliveries") << " would be replayed (dry run)\n";
        else
          std::cout << "replayed " << plural(n, "delivery", "deliveries") << "\n";
      });
  addWebhookIdArg(replay, s);
  addBodyOption<std::string>(replay, s, "--status", "/status",
                             "failed (default) or all (failed and delivered)");
  addTargetOption(replay, s, "only this target, by name or id", false);
  addBodyOption<std::string>(replay, s, "--since", "/since",
                             "events received at or after this ISO-8601 time");
  addBodyOption<std::string>(replay, s, "--until", "/until",
                             "events received before this ISO-8601 time");
  addBodyOption<std::string>(replay, s, "--event-type", "/event_type",
                             "events of this type, or prefix.*");
  replay.add_flag_callback("--dry-run", [s] { s->body["dry_run"] = true; },
                           "only count what would be replayed");
}

// `status`: the node at a glance, the daemon's node summary (one request,
// whatever the number of webhooks): what a shell needs during a receiver's
// outage (docs/receiver-outages.md).
void addStatusCommand(CLI::App& app, const SessionPtr& s) {
  CLI::App* cmd = app.add_subcommand(
      "status", "the node's summary: webhooks, backlog, breakers open, oldest pending delivery");
  addSharedOptions(*cmd, s);
  cmd->callback([s] {
    s->exitCode = 1;
    const ApiCall call{"GET", "/summary", {}};
    const auto answer = sendCall(*s, call);
    if (!answer) return;
    // A daemon older than the route: say so, rather than sum something else.
    if (answer->status == 404 || answer->status == 405) {
      std::cerr << "webhooker: " << daemonUrl(*s) << " does not answer " << call.method << " "
                << kApiPrefix << call.path << " (" << answer->errorText()
                << "); is it a webhooker daemon older than this CLI? Upgrade it, or use the "
                   "CLI of its version.\n";
      return;
    }
    if (!successBody(*answer)) return;
    const json summary = answer->json();
    if (!summary.is_object()) {
      std::cerr << "webhooker: the daemon's answer is not a JSON object\n";
      return;
    }
    if (s->rawJson)
      std::cout << summary.dump() << "\n";
    else
      cli::showNodeSummary(summary);
    s->exitCode = 0;
  });
}

}  // namespace

void addClientCommands(CLI::App& app, int& exitCode) {
  auto session = std::make_shared<Session>(exitCode);
  addWebhookCommands(app, session);
  addEntrypointCommands(app, session);
  addTargetCommands(app, session);
  addOperationalWebhookCommands(app, session);
  addTokenCommands(app, session);
  addEventCommands(app, session);
  addDeliveryCommands(app, session);
  addRedriveCommands(app, session);
  addStatusCommand(app, session);
}

}  // namespace webhooker::app
