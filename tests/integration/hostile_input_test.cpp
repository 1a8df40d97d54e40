// Hostile input, as a table: requests a careless client or an attacker
// sends to the ingest and admin surfaces — malformed and deeply nested
// JSON, wrong types, overlong request lines and headers, path tricks,
// header injection in target configs, CR/LF and spaces in URLs, internal
// addresses in odd spellings, unknown ids, wrong methods, oversize bodies,
// bad credentials. Each is written byte for byte to a raw socket (so the
// client library cannot tidy it up) to the real HttpServer on loopback,
// and must be answered with its 4xx (501 for a transfer coding we do not
// implement) and a JSON error body; afterwards every table of the main DB
// and of every events DB is exactly as before, and nothing was handed to
// the engine.
//
// The ordinary bad-input cases of each endpoint live next to it
// (admin_api_test, ingest_test); this table is about the hostile ones.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/json_depth.h"
#include "base/uuid.h"
#include "tests/support/test_server.h"

namespace webhooker::testing {
namespace {

using nlohmann::json;

constexpr size_t kBodyLimit = 1024 * 1024;  // the default

// Writes `raw` to a fresh connection and reads the answer.
// A missing or unparsable answer comes back as an error Result.
httplib::Result rawExchange(int port, const std::string& raw) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("connect failed");
  }
  // The server may answer and close before reading everything (a body over
  // the limit): a failed send is fine, the answer is what counts.
  for (size_t sent = 0; sent < raw.size();) {
    const ssize_t n = ::send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  // Read until the whole answer is in (a refused request line leaves the
  // connection open for cpp-httplib's keep-alive wait) or the server closes.
  std::string in;
  char buf[16384];
  size_t headEnd = std::string::npos;
  size_t wanted = std::string::npos;
  for (ssize_t n; in.size() < wanted && (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
    in.append(buf, static_cast<size_t>(n));
    if (headEnd != std::string::npos || (headEnd = in.find("\r\n\r\n")) == std::string::npos)
      continue;
    const std::string head = in.substr(0, headEnd);
    if (const size_t at = head.find("\r\nContent-Length: "); at != std::string::npos)
      wanted = headEnd + 4 + std::stoul(head.substr(at + 18));
  }
  ::close(fd);

  if (in.compare(0, 9, "HTTP/1.1 ") != 0 || headEnd == std::string::npos)
    return httplib::Result(nullptr, httplib::Error::Read);
  auto res = std::make_unique<httplib::Response>();
  res->status = std::stoi(in.substr(9, 3));
  for (size_t at = in.find("\r\n") + 2; at < headEnd;) {
    const size_t end = in.find("\r\n", at);
    const std::string line = in.substr(at, end - at);
    const size_t colon = line.find(':');
    if (colon != std::string::npos)
      res->headers.emplace(line.substr(0, colon), line.substr(line.find_first_not_of(' ', colon + 1)));
    at = end + 2;
  }
  res->body = in.substr(headEnd + 4);
  return httplib::Result(std::move(res), httplib::Error::Success);
}

// Every table of the main DB and of every events DB, the set of events
// files and what reached the dispatcher: equal snapshots mean the request
// changed nothing.
struct Snapshot {
  std::map<std::string, std::string> dumps;  // file name -> dumpDatabase
  size_t batches = 0;
  size_t targetChanges = 0;

  explicit Snapshot(const TestServer& server) {
    dumps["webhooker.db"] = dumpDatabase(server.mainDbPath());
    for (const std::string& name : eventsDbFiles(server.dataDir()))
      dumps[name] = dumpDatabase(server.dataDir() / name);
    batches = server.dispatcher().batchCount();
    targetChanges = server.dispatcher().targetChanges().size();
  }
  bool operator==(const Snapshot&) const = default;
};

struct Row {
  std::string name;
  std::string method;
  std::string path;  // {W} webhook, {E} entrypoint, {I} inactive entrypoint, {T} target,
                     // {V} event, {D} delivery; ignored when `raw` is set
  std::string body;
  int status;
  std::string code;              // the expected error code; "" for any
  std::string headers = "";      // extra header lines, each ending in \r\n
  bool token = true;             // send the admin token
  std::string raw = "";          // the whole request, as is
};

// 'depth' levels of `open`, optionally closed again.
std::string nested(size_t depth, char open, char close = 0) {
  std::string out(depth, open);
  if (close) out.append(depth, close);
  return out;
}
std::string deepObject(size_t depth) {
  std::string out;
  for (size_t i = 0; i < depth; ++i) out += R"({"a":)";
  out += "1";
  out.append(depth, '}');
  return out;
}

// `count` headers X-Pad-<i> with values of `size` bytes.
std::string manyHeaders(size_t count, size_t size) {
  std::string out;
  for (size_t i = 0; i < count; ++i)
    out += "X-Pad-" + std::to_string(i) + ": " + std::string(size, 'p') + "\r\n";
  return out;
}

std::string httpTarget(const json& config) {
  return json{{"name", "t"}, {"type", "http"}, {"config", config}}.dump();
}
std::string urlTarget(const std::string& url) { return httpTarget({{"url", url}}); }
std::string headerTarget(const std::string& name, const std::string& value) {
  return httpTarget({{"url", "https://example.com/in"}, {"headers", {{name, value}}}});
}

std::string replaceAll(std::string text, const std::map<std::string, std::string>& vars) {
  for (const auto& [from, to] : vars)
    for (size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
  return text;
}

}  // namespace

TEST_CASE("hostile requests get their 4xx and a JSON error, and change nothing") {
  TestServer server;
  const json webhook = server.createWebhook("shop");
  const std::string W = webhook["id"].get<std::string>();
  const std::string E = webhook["entrypoints"][0]["id"].get<std::string>();
  const std::string T =
      server.createTarget(W, json::parse(urlTarget("https://93.184.216.34/in")))["id"];
  auto admin = server.client();
  const std::string I = jsonOf(postJson(admin, "/api/v1/webhooks/" + W + "/entrypoints",
                                        json::object()))["id"];
  REQUIRE(statusOf(patchJson(admin, "/api/v1/webhooks/" + W + "/entrypoints/" + I,
                             {{"active", false}})) == 200);
  // One stored event with a pending delivery, so the events DB has rows to lose.
  auto sender = server.anonymousClient();
  const std::string V = jsonOf(sender.Post("/hooks/" + E, R"({"order":1})", "application/json"))["event_id"];
  REQUIRE(server.dispatcher().tasks().size() == 1);
  const std::string D = server.dispatcher().tasks()[0].deliveryId;
  const std::string unknown = newUuid();
  const std::map<std::string, std::string> vars = {{"{W}", W}, {"{E}", E}, {"{I}", I},
                                                   {"{T}", T}, {"{V}", V}, {"{D}", D},
                                                   {"{U}", unknown}, {"{K}", server.token()}};

  const std::string A = "/api/v1/webhooks";
  const std::string WH = A + "/{W}";
  const std::string TS = WH + "/targets";
  const std::string H = "/hooks/{E}";
  const std::string big(kBodyLimit + 1, 'x');
  const std::string longHeader = "X-Long: " + std::string(16 * 1024, 'a') + "\r\n";

  const std::vector<Row> rows = {
      // --- ingest: ids and paths ---
      {"ingest: not a uuid", "POST", "/hooks/not-a-uuid", "{}", 404, "not_found"},
      {"ingest: unknown entrypoint", "POST", "/hooks/{U}", "{}", 404, "not_found"},
      {"ingest: a webhook id is not an entrypoint", "POST", "/hooks/{W}", "{}", 404, "not_found"},
      {"ingest: uuid with trailing garbage", "POST", H + "x", "{}", 404, "not_found"},
      {"ingest: uuid with a NUL", "POST", H + "%00", "{}", 404, "not_found"},
      {"ingest: extra path segment", "POST", H + "/extra", "{}", 404, "not_found"},
      {"ingest: dot-dot into the API", "POST", "/hooks/../api/v1/webhooks", R"({"name":"x"})", 404,
       "not_found"},
      {"ingest: encoded dot-dot", "POST", "/hooks/%2e%2e%2fapi%2fv1%2fwebhooks",
       R"({"name":"x"})", 404, "not_found"},
      {"ingest: encoded slash", "POST", H + "%2Fx", "{}", 404, "not_found"},
      {"ingest: double slash", "POST", "//hooks/{E}", "{}", 404, "not_found"},
      {"ingest: inactive entrypoint", "POST", "/hooks/{I}", "{}", 410, "entrypoint_inactive"},
      // --- ingest: methods ---
      {"ingest: GET", "GET", H, "", 405, "method_not_allowed"},
      {"ingest: PUT", "PUT", H, "{}", 405, "method_not_allowed"},
      {"ingest: DELETE", "DELETE", H, "", 405, "method_not_allowed"},
      {"ingest: PATCH", "PATCH", H, "{}", 405, "method_not_allowed"},
      // --- ingest: bodies and headers ---
      {"ingest: body over the limit", "POST", H, big, 413, "body_too_large"},
      {"ingest: chunked body over the limit", "", "", "", 413, "body_too_large", "", true,
       "POST /hooks/{E} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
       "Transfer-Encoding: chunked\r\n\r\n100001\r\n" + std::string(0x100001, 'x') + "\r\n0\r\n\r\n"},
      {"ingest: non-numeric Content-Length", "", "", "", 400, "bad_request", "", true,
       "POST /hooks/{E} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: abc\r\n\r\n{}"},
      {"ingest: negative Content-Length", "", "", "", 400, "bad_request", "", true,
       "POST /hooks/{E} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: -2\r\n\r\n{}"},
      {"ingest: two different Content-Lengths", "", "", "", 400, "bad_request", "", true,
       "POST /hooks/{E} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n"
       "Content-Length: 0\r\n\r\n{}"},
      {"admin: non-numeric Content-Length", "", "", "", 400, "bad_request", "", true,
       "POST /api/v1/webhooks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
       "Authorization: Bearer {K}\r\nContent-Length: 1x\r\n\r\n{\"name\":\"x\"}"},
      {"ingest: Content-Length and chunked at once", "", "", "", 400, "bad_request", "", true,
       "POST /hooks/{E} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5\r\n"
       "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
      {"ingest: an unknown transfer coding", "", "", "", 501, "not_implemented", "", true,
       "POST /hooks/{E} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
       "Transfer-Encoding: gzip\r\n\r\n{}"},
      {"ingest: a lower-case method", "", "", "", 400, "bad_request", "", true,
       "post /hooks/{E} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"},
      {"ingest: absolute-form target to another host", "", "", "", 404, "not_found", "", true,
       "POST http://evil.example/hooks/{E} HTTP/1.1\r\nHost: evil.example\r\n"
       "Connection: close\r\nContent-Length: 2\r\n\r\n{}"},
      {"ingest: a broken percent escape", "POST", "/hooks/%zz{E}", "{}", 404, "not_found"},
      {"ingest: OPTIONS", "OPTIONS", H, "", 405, "method_not_allowed"},
      {"POST on the health check", "POST", "/healthz", "{}", 405, "method_not_allowed"},
      {"ingest: idempotency key of 300 characters", "POST", H, "{}", 400,
       "invalid_idempotency_key", "Idempotency-Key: " + std::string(300, 'k') + "\r\n"},
      {"ingest: a 16 KiB header line", "POST", H, "{}", 400, "", longHeader},
      {"ingest: 300 headers", "POST", H, "{}", 431, "headers_too_large", manyHeaders(300, 10)},
      {"ingest: 100 KiB of headers", "POST", H, "{}", 431, "headers_too_large",
       manyHeaders(20, 5000)},
      {"admin: 100 KiB of headers", "POST", A, R"({"name":"x"})", 431, "headers_too_large",
       manyHeaders(20, 5000)},
      {"ingest: a 16 KiB URL", "POST", H + "?q=" + std::string(16 * 1024, 'q'), "{}", 414, ""},
      {"ingest: CR LF inside the request line", "", "", "", 400, "", "", true,
       "POST /hooks/{E}\r\nX-Injected: 1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
       "Content-Length: 2\r\n\r\n{}"},
      {"ingest: a space inside the path", "", "", "", 400, "", "", true,
       "POST /hooks/{E} extra HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
       "Content-Length: 2\r\n\r\n{}"},
      {"ingest: not HTTP at all", "", "", "", 400, "", "", true,
       "\x16\x03\x01\x02\xff\x01\x7f\x01\xfc\x03\x03\r\n\r\n"},
      // --- admin: authentication ---
      {"admin: no token", "GET", A, "", 401, "unauthorized", "", false},
      {"admin: wrong token", "GET", A, "", 401, "unauthorized",
       "Authorization: Bearer whk_wrong-token-0123456789\r\n", false},
      {"admin: empty bearer", "GET", A, "", 401, "unauthorized", "Authorization: Bearer \r\n",
       false},
      {"admin: basic instead of bearer", "GET", A, "", 401, "unauthorized",
       "Authorization: Basic YWRtaW46YWRtaW4=\r\n", false},
      {"admin: a 6 KiB token", "GET", A, "", 401, "unauthorized",
       "Authorization: Bearer " + std::string(6000, 't') + "\r\n", false},
      {"admin: token as a query parameter", "GET", A + "?token=whk_x", "", 401, "unauthorized", "",
       false},
      {"admin: no token, write", "POST", A, R"({"name":"x"})", 401, "unauthorized", "", false},
      {"admin: no token, delete", "DELETE", WH, "", 401, "unauthorized", "", false},
      // --- admin: ids and paths ---
      {"admin: unknown webhook", "DELETE", A + "/{U}", "", 404, "not_found"},
      {"admin: webhook id with dot-dot", "DELETE", A + "/..", "", 404, "not_found"},
      {"admin: encoded dot-dot and slashes", "DELETE", A + "/%2e%2e%2f%2e%2e%2fwebhooker.db", "",
       404, "not_found"},
      {"admin: path traversal into a file name", "DELETE", A + "/..%2F..%2Fetc%2Fpasswd", "", 404,
       "not_found"},
      {"admin: double slash", "DELETE", "/api/v1//webhooks/{W}", "", 404, "not_found"},
      {"admin: uuid in braces", "DELETE", A + "/%7B{W}%7D", "", 404, "not_found"},
      {"admin: uuid with a NUL", "DELETE", WH + "%00", "", 404, "not_found"},
      {"admin: unknown target", "DELETE", TS + "/{U}", "", 404, "not_found"},
      {"admin: entrypoint id as a target id", "DELETE", TS + "/{E}", "", 404, "not_found"},
      {"admin: unknown event", "POST", WH + "/events/{U}/redeliver", "", 404, "not_found"},
      {"admin: unknown delivery", "POST", WH + "/deliveries/{U}/retry", "", 404, "not_found"},
      {"admin: event id as a delivery id", "POST", WH + "/deliveries/{V}/retry", "", 404,
       "not_found"},
      {"admin: unknown route", "POST", WH + "/nonsense", "{}", 404, "not_found"},
      {"admin: a 16 KiB URL", "GET", A + "/" + std::string(16 * 1024, 'a'), "", 414, ""},
      // --- admin: methods ---
      {"admin: PUT on a webhook", "PUT", WH, R"({"name":"x"})", 405, "method_not_allowed"},
      {"admin: DELETE on the collection", "DELETE", A, "", 405, "method_not_allowed"},
      {"admin: TRACE", "TRACE", WH, "", 400, "bad_request"},
      // --- admin: JSON ---
      {"admin: 100k unclosed [", "POST", A, nested(100000, '['), 400, "invalid_json"},
      {"admin: 100k nested arrays", "POST", A, nested(100000, '[', ']'), 400, "invalid_json"},
      {"admin: one level too deep", "POST", A,
       R"({"name":"x","mask_pointers":)" + nested(kMaxJsonDepth, '[', ']') + "}", 400,
       "invalid_json"},
      {"admin: deep but within the limit", "POST", A,
       R"({"name":"x","mask_pointers":[)" + nested(kMaxJsonDepth - 2, '[', ']') + "]}", 400,
       "invalid_field"},
      {"admin: 100k nested objects", "POST", A, deepObject(100000), 400, "invalid_json"},
      {"admin: deep array as the name", "POST", A,
       R"({"name":)" + nested(100000, '[', ']') + "}", 400, "invalid_json"},
      {"admin: deep array as a mask pointer", "POST", A,
       R"({"name":"x","mask_pointers":[)" + nested(100000, '[', ']') + "]}", 400,
       "invalid_json"},
      {"admin: deep object in a target config", "POST", TS,
       R"({"name":"t","type":"http","config":{"url":"https://example.com","x":)" +
           deepObject(100000) + "}}",
       400, "invalid_json"},
      {"admin: deep object in a target patch", "PATCH", TS + "/{T}",
       R"({"config":{"headers":)" + deepObject(100000) + "}}", 400, "invalid_json"},
      {"admin: deep object as retry", "PATCH", TS + "/{T}", R"({"retry":)" + deepObject(100000) + "}",
       400, "invalid_json"},
      {"admin: deep object in redeliver", "POST", WH + "/events/{V}/redeliver",
       R"({"target_ids":)" + nested(100000, '[', ']') + "}", 400, "invalid_json"},
      {"admin: a huge JSON body", "POST", A,
       R"({"name":"x","description":")" + std::string(900 * 1024, 'd') + R"("})", 400,
       "invalid_field"},
      {"admin: body over the limit", "POST", A, R"({"name":")" + big + R"("})", 413, ""},
      {"admin: invalid UTF-8", "POST", A, "{\"name\":\"\xff\xfe\"}", 400, "invalid_json"},
      {"admin: a lone surrogate", "POST", A, R"({"name":"\ud800"})", 400, "invalid_json"},
      {"admin: NaN", "POST", A, R"({"name":"x","retention_days":NaN})", 400, "invalid_json"},
      {"admin: a number too large for a double", "POST", A,
       R"({"name":"x","retention_days":1e999})", 400, "invalid_json"},
      {"admin: a number too large for int64", "POST", A,
       R"({"name":"x","retention_days":18446744073709551616})", 400, "invalid_field"},
      {"admin: trailing garbage", "POST", A, R"({"name":"x"} {"name":"y"})", 400, "invalid_json"},
      {"admin: a comment", "POST", A, R"({"name":"x" /* hi */})", 400, "invalid_json"},
      {"admin: duplicate keys, last one wrong", "POST", A, R"({"name":"x","name":5})", 400,
       "invalid_field"},
      {"admin: name with CR LF and 300 chars", "POST", A,
       json{{"name", std::string(300, 'n') + "\r\n"}}.dump(), 400, "invalid_field"},
      // --- admin: target header configs ---
      {"header: CR LF in the name", "POST", TS, headerTarget("X-A\r\nInjected", "v"), 400,
       "invalid_config"},
      {"header: LF in the value", "POST", TS, headerTarget("X-A", "v\nInjected: 1"), 400,
       "invalid_config"},
      {"header: NUL in the value", "POST", TS, headerTarget("X-A", std::string("v\0w", 3)), 400,
       "invalid_config"},
      {"header: colon in the name", "POST", TS, headerTarget("X-A:", "v"), 400, "invalid_config"},
      {"header: empty name", "POST", TS, headerTarget("", "v"), 400, "invalid_config"},
      {"header: non-ASCII name", "POST", TS, headerTarget("X-\xc3\xa9", "v"), 400,
       "invalid_config"},
      {"header: host in lower case", "POST", TS, headerTarget("host", "evil.example"), 400,
       "invalid_config"},
      {"header: Content-Length", "POST", TS, headerTarget("Content-Length", "0"), 400,
       "invalid_config"},
      {"header: Transfer-Encoding", "POST", TS, headerTarget("Transfer-Encoding", "chunked"), 400,
       "invalid_config"},
      {"header: Connection", "POST", TS, headerTarget("Connection", "close"), 400,
       "invalid_config"},
      {"header: a 9 KiB value", "POST", TS, headerTarget("X-A", std::string(9000, 'v')), 400,
       "invalid_config"},
      {"header: patched in with CR LF", "PATCH", TS + "/{T}",
       json{{"config", {{"headers", {{"X-A", "a\r\nHost: evil"}}}}}}.dump(), 400,
       "invalid_config"},
      // --- admin: target URLs ---
      {"url: loopback", "POST", TS, urlTarget("http://127.0.0.1/"), 400, "blocked_destination"},
      {"url: loopback as a decimal", "POST", TS, urlTarget("http://2130706433/"), 400,
       "blocked_destination"},
      {"url: loopback in hex", "POST", TS, urlTarget("http://0x7f000001/"), 400,
       "blocked_destination"},
      {"url: loopback in octal", "POST", TS, urlTarget("http://0177.0.0.1/"), 400,
       "blocked_destination"},
      {"url: loopback short form", "POST", TS, urlTarget("http://127.1/"), 400,
       "blocked_destination"},
      {"url: zero address", "POST", TS, urlTarget("http://0.0.0.0:8080/"), 400,
       "blocked_destination"},
      {"url: cloud metadata", "POST", TS, urlTarget("http://169.254.169.254/latest/meta-data/"),
       400, "blocked_destination"},
      {"url: metadata as a decimal", "POST", TS, urlTarget("http://2852039166/"), 400,
       "blocked_destination"},
      {"url: RFC 1918 in hex parts", "POST", TS, urlTarget("http://0xa.0x0.0x0.0x1/"), 400,
       "blocked_destination"},
      {"url: CGNAT", "POST", TS, urlTarget("http://100.64.0.1/"), 400, "blocked_destination"},
      {"url: IPv6 loopback", "POST", TS, urlTarget("http://[::1]/"), 400, "blocked_destination"},
      {"url: IPv4-mapped IPv6", "POST", TS, urlTarget("http://[::ffff:127.0.0.1]/"), 400,
       "blocked_destination"},
      {"url: IPv4-mapped IPv6 in hex", "POST", TS, urlTarget("http://[::ffff:a9fe:a9fe]/"), 400,
       "blocked_destination"},
      {"url: IPv6 ULA", "POST", TS, urlTarget("https://[fd00::1]/"), 400, "blocked_destination"},
      {"url: link-local IPv6 with zone", "POST", TS, urlTarget("http://[fe80::1%25eth0]/"), 400,
       ""},
      {"url: userinfo hiding the host", "POST", TS, urlTarget("http://example.com@127.0.0.1/"),
       400, "invalid_config"},
      {"url: fragment hiding the host", "POST", TS, urlTarget("http://127.0.0.1#@example.com/"),
       400, "blocked_destination"},
      {"url: backslash trick", "POST", TS, urlTarget("http://example.com\\@127.0.0.1/"), 400,
       "invalid_config"},
      {"url: CR LF", "POST", TS, urlTarget("https://example.com/\r\nHost: evil"), 400,
       "invalid_config"},
      {"url: a space", "POST", TS, urlTarget("https://example.com/a b"), 400, "invalid_config"},
      {"url: a tab in the host", "POST", TS, urlTarget("https://exam\tple.com/"), 400,
       "invalid_config"},
      {"url: file scheme", "POST", TS, urlTarget("file:///etc/passwd"), 400, "invalid_config"},
      {"url: gopher scheme", "POST", TS, urlTarget("gopher://127.0.0.1:6379/_FLUSHALL"), 400,
       "invalid_config"},
      {"url: no scheme separator", "POST", TS, urlTarget("http:example.com"), 400,
       "invalid_config"},
      {"url: port out of range", "POST", TS, urlTarget("https://example.com:70000/"), 400,
       "invalid_config"},
      {"url: 3000 characters", "POST", TS,
       urlTarget("https://example.com/" + std::string(3000, 'p')), 400, "invalid_config"},
      {"url: slack to a private address", "POST", TS,
       json{{"name", "s"}, {"type", "slack"}, {"config", {{"webhook_url", "https://10.0.0.1/x"}}}}
           .dump(),
       400, "blocked_destination"},
      {"url: patched to loopback", "PATCH", TS + "/{T}",
       json{{"config", {{"url", "http://[::ffff:7f00:1]/"}}}}.dump(), 400, "blocked_destination"},
      // --- admin: query strings ---
      {"query: limit not a number", "GET", WH + "/events?limit=abc", "", 400, "invalid_field"},
      {"query: limit negative", "GET", WH + "/events?limit=-1", "", 400, "invalid_field"},
      {"query: limit huge", "GET", WH + "/events?limit=99999999999999999999", "", 400,
       "invalid_field"},
      {"query: since not a time", "GET", WH + "/events?since=yesterday", "", 400, "invalid_field"},
      {"query: status unknown", "GET", WH + "/deliveries?status=lost", "", 400, ""},
      {"query: target_id with SQL", "GET", WH + "/deliveries?target_id=%27%20OR%201%3D1--", "",
       400, "invalid_field"},
      {"query: forged cursor", "GET", WH + "/events?cursor=Zm9vfGJhcnxiYXo", "", 400,
       "invalid_cursor"},
      {"query: repeated parameter", "GET", WH + "/events?limit=1&limit=2", "", 400,
       "invalid_parameter"},
      {"query: unknown parameter", "GET", WH + "/events?drop=table", "", 400,
       "unknown_parameter"},
      // --- admin: replay and redeliver bodies ---
      {"replay: since not a time", "POST", WH + "/replay", R"({"since":"1 Jan"})", 400, ""},
      {"replay: dry_run a string", "POST", WH + "/replay", R"({"dry_run":"yes"})", 400,
       "invalid_field"},
      {"replay: target_id not a uuid", "POST", WH + "/replay", R"({"target_id":"../x"})", 400, ""},
      {"redeliver: target_ids a string", "POST", WH + "/events/{V}/redeliver",
       R"({"target_ids":"all"})", 400, ""},
      {"redeliver: target_ids empty", "POST", WH + "/events/{V}/redeliver", R"({"target_ids":[]})",
       400, ""},
  };
  REQUIRE(rows.size() >= 60);

  std::set<std::string> names;
  for (const Row& row : rows) {
    CAPTURE(row.name);
    REQUIRE(names.insert(row.name).second);  // names identify rows in failures
    std::string raw = replaceAll(row.raw, vars);
    if (raw.empty()) {
      raw = row.method + " " + replaceAll(row.path, vars) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
            "Connection: close\r\n";
      if (row.token) raw += "Authorization: Bearer " + server.token() + "\r\n";
      if (!row.body.empty() || row.method == "POST" || row.method == "PUT" ||
          row.method == "PATCH")
        raw += "Content-Type: application/json\r\nContent-Length: " +
               std::to_string(row.body.size()) + "\r\n";
      raw += replaceAll(row.headers, vars) + "\r\n" + replaceAll(row.body, vars);
    }
    const Snapshot before(server);
    const httplib::Result res = rawExchange(server.port(), raw);
    CHECK(statusOf(res) == row.status);
    const std::string code = errorCode(res);
    CHECK_MESSAGE(code.find('<') == std::string::npos, code.substr(0, 300));
    if (!row.code.empty()) CHECK(code == row.code);
    if (res) {
      CHECK(res->get_header_value("Content-Type") == "application/json");
      CHECK(res->body.find(server.token()) == std::string::npos);
    }
    CHECK(Snapshot(server) == before);
  }

  // The server is still well and the data still there.
  CHECK(statusOf(admin.Get("/api/v1/webhooks/" + W + "/targets/" + T)) == 200);
  CHECK(statusOf(admin.Get("/api/v1/webhooks/" + W + "/events/" + V)) == 200);
  CHECK(statusOf(sender.Post("/hooks/" + E, "{}", "application/json")) == 200);
}

}  // namespace webhooker::testing
