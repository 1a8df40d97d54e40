#include "app/admin_client.h"

#include <httplib.h>

namespace webhooker::app {

namespace {

// cpp-httplib names its errors in one word ("Connection"); a user needs a
// sentence and a hint.
std::string whyUnreachable(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "could not connect (is the daemon running, and is this its address?)";
    case httplib::Error::ConnectionTimeout: return "no connection within the timeout";
    case httplib::Error::Read:
    case httplib::Error::Write: return "the connection broke before the daemon answered";
    default: return "HTTP client error " + httplib::to_string(error);
  }
}

}  // namespace

nlohmann::json AdminAnswer::json() const {
  return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
}

std::string AdminAnswer::errorText() const {
  const std::string http = "HTTP " + std::to_string(status);
  const nlohmann::json answer = json();
  if (!answer.is_object() || !answer.contains("error") || !answer["error"].is_object())
    return http;
  const nlohmann::json& error = answer["error"];
  return error.value("message", std::string("request failed")) + " (" +
         error.value("code", std::string("error")) + ", " + http + ")";
}

Result<AdminClient> AdminClient::forUrl(const std::string& url, std::string token,
                                        std::chrono::seconds timeout) {
  const auto bad = [&] {
    return makeError(error_code::kInvalidArgument,
                     "the daemon's address must look like http://host:port (got \"" + url +
                         "\")");
  };
  const size_t schemeEnd = url.find("://");
  if (schemeEnd == std::string::npos) return bad();
  const std::string scheme = url.substr(0, schemeEnd);
  if (scheme != "http" && scheme != "https") return bad();
  const size_t pathStart = url.find('/', schemeEnd + 3);
  if (pathStart == schemeEnd + 3 || schemeEnd + 3 == url.size()) return bad();  // no host
  std::string basePath = pathStart == std::string::npos ? "" : url.substr(pathStart);
  while (!basePath.empty() && basePath.back() == '/') basePath.pop_back();
  return AdminClient(url, url.substr(0, pathStart), std::move(basePath), std::move(token),
                     timeout);
}

AdminClient::AdminClient(std::string url, std::string origin, std::string basePath,
                         std::string token, std::chrono::seconds timeout)
    : url_(std::move(url)),
      origin_(std::move(origin)),
      basePath_(std::move(basePath)),
      token_(std::move(token)),
      timeout_(timeout) {}

Result<AdminAnswer> AdminClient::send(const std::string& method, const std::string& path,
                                      const std::string& body,
                                      const std::string& contentType) const {
  httplib::Client client(origin_);
  // Without TCP_NODELAY each small request can stall on Nagle's algorithm.
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(timeout_);
  client.set_read_timeout(timeout_);
  client.set_write_timeout(timeout_);
  if (!token_.empty()) client.set_bearer_token_auth(token_);

  httplib::Request req;
  req.method = method;
  req.path = basePath_ + path;
  if (!contentType.empty()) {
    req.body = body;
    req.set_header("Content-Type", contentType);
  }
  const httplib::Result res = client.send(req);
  if (!res)
    return makeError(error_code::kUnavailable,
                     "cannot reach " + url_ + ": " + whyUnreachable(res.error()));
  AdminAnswer answer{res->status, res->body, {}};
  for (const auto& [name, value] : res->headers) answer.headers[name] = value;
  return answer;
}

Result<AdminAnswer> AdminClient::sendJson(const std::string& method, const std::string& path,
                                          const std::optional<nlohmann::json>& body) const {
  if (!body) return send(method, path);
  return send(method, path, body->dump(), "application/json");
}

std::string pathSegment(std::string_view raw) {
  constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : raw) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

}  // namespace webhooker::app
