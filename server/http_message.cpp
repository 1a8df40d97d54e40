#include "server/http_message.h"

#include <algorithm>
#include <cctype>

#include "base/hex_digit.h"

namespace webhooker::server {

namespace {

unsigned char lower(char c) {
  return static_cast<unsigned char>(std::tolower(static_cast<unsigned char>(c)));
}

}  // namespace

bool CaseInsensitiveLess::operator()(std::string_view a, std::string_view b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [](char x, char y) { return lower(x) < lower(y); });
}

bool HttpRequest::has_header(std::string_view name) const {
  return headers.find(name) != headers.end();
}

std::string HttpRequest::get_header_value(std::string_view name, size_t id) const {
  auto [it, end] = headers.equal_range(name);
  for (; it != end && id > 0; ++it, --id) {
  }
  return it == end ? std::string() : it->second;
}

size_t HttpRequest::get_header_value_count(std::string_view name) const {
  auto [it, end] = headers.equal_range(name);
  return static_cast<size_t>(std::distance(it, end));
}

void HttpResponse::set_header(std::string_view name, std::string value) {
  headers.erase(std::string(name));
  headers.emplace(std::string(name), std::move(value));
}

void HttpResponse::set_content(std::string content, std::string_view contentType) {
  body = std::move(content);
  set_header("Content-Type", std::string(contentType));
}

std::string decodeUrl(std::string_view text, bool plusIsSpace) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      const int hi = hexDigitValue(text[i + 1]);
      const int lo = hexDigitValue(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += plusIsSpace && c == '+' ? ' ' : c;
  }
  return out;
}

std::multimap<std::string, std::string> parseQuery(std::string_view query) {
  std::multimap<std::string, std::string> out;
  while (!query.empty()) {
    const size_t amp = std::min(query.find('&'), query.size());
    const std::string_view pair = query.substr(0, amp);
    query.remove_prefix(std::min(amp + 1, query.size()));
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    out.emplace(decodeUrl(name, true), decodeUrl(value, true));
  }
  return out;
}

}  // namespace webhooker::server
