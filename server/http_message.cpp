#include "server/http_message.h"

#include <algorithm>
#include <cctype>


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

std::multimap<std::string, std::string> parseQuery(std::string_view query) {
  std::multimap<std::string, std::string> out;
  for (auto& [name, value] : parseFormPairs(query)) out.emplace(std::move(name), std::move(value));
  return out;
}

}  // namespace webhooker::server
