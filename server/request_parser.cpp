#include "server/request_parser.h"

#include <fmt/format.h>

#include <boost/beast/http/error.hpp>

#include <algorithm>

#include "base/ascii_case.h"
#include "server/json_io.h"

namespace webhooker::server {

namespace {

namespace http = boost::beast::http;

const char* const kBadLength =
    "Content-Length must be one valid length, and not sent with Transfer-Encoding";

HttpResponse headersTooLarge() {
  return errorResponse(431, error_code::kHeadersTooLarge,
                       fmt::format("at most {} headers of {} bytes in all",
                                   RequestParser::kMaxHeaderCount, RequestParser::kMaxHeaderBytes));
}

HttpResponse lineTooLong() {
  return errorResponse(400, error_code::kBadRequest, "a header line is longer than 8 KiB");
}

}  // namespace

RequestParser::RequestParser() {
  header_limit(static_cast<std::uint32_t>(kHeadLimit));
  body_limit(boost::none);  // set after the head, for a 413 before any body
}

size_t RequestParser::feed(boost::asio::const_buffer bytes, ParseError& ec) {
  const bool inHead = !is_header_done();
  // In the head, stop where it ends: the body needs its limit first.
  eager(!inHead);
  const size_t used = put(bytes, ec);
  if (inHead) {
    // obs-fold is a line end followed by a space or a tab; nowhere else in
    // a head can a line begin with one.
    const auto* data = static_cast<const char*>(bytes.data());
    for (size_t i = 0; i < used; ++i) {
      if (lastHeadByteWasLf_ && (data[i] == ' ' || data[i] == '\t')) {
        refuse(ec, errorResponse(400, error_code::kBadRequest,
                                 "a header line is folded (obs-fold); send each field on one "
                                 "line"));
        return used;
      }
      lastHeadByteWasLf_ = data[i] == '\n';
    }
  } else {
    bodyWireBytes_ += used;
    if (bodyWireBytes_ - body_.size() > kMaxFramingBytes) {
      refuse(ec, errorResponse(400, error_code::kBadRequest,
                               fmt::format("the body's chunk framing (sizes, extensions, "
                                           "trailers) is over {} bytes",
                                           kMaxFramingBytes)));
      return used;
    }
  }
  if (ec == http::error::need_more && bytes.size() - used >= bufferLimit()) {
    if (inHead) {
      refuse(ec, headersTooLarge());
    } else {
      refuse(ec, errorResponse(400, error_code::kBadRequest,
                               fmt::format("a chunk line or the trailers are longer than {} bytes",
                                           kMaxFramingLine)));
    }
  }
  return used;
}

std::optional<HttpResponse> RequestParser::refusedHead(const HttpRequest& head) const {
  if (head.target.size() > kMaxLineBytes)
    return errorResponse(414, error_code::kUriTooLong, "the request URI is too long");
  size_t headerBytes = 0;
  for (const auto& [name, value] : head.headers) {
    if (name.size() + value.size() + 2 > kMaxLineBytes) return lineTooLong();
    headerBytes += name.size() + value.size();
  }
  if (head.headers.size() > kMaxHeaderCount || headerBytes > kMaxHeaderBytes)
    return headersTooLarge();
  // RFC 9112 §3.2: exactly one Host in HTTP/1.1, never two.
  const size_t hosts = head.get_header_value_count("Host");
  if (hosts > 1 || (hosts == 0 && version_ >= 11))
    return errorResponse(400, error_code::kBadRequest,
                         "an HTTP/1.1 request needs exactly one Host header");
  // The parser has refused a length that is not a number, or comes with
  // Transfer-Encoding; a repeated or listed one, even of equal values, is
  // what a proxy may read differently, and both framings at once is how
  // requests are smuggled.
  const size_t lengths = head.get_header_value_count("Content-Length");
  if (lengths > 1 ||
      (lengths == 1 && head.get_header_value("Content-Length").find(',') != std::string::npos))
    return errorResponse(400, error_code::kBadRequest, kBadLength);
  // RFC 9112 §6.1: a transfer coding other than chunked is 501.
  const size_t codings = head.get_header_value_count("Transfer-Encoding");
  const std::string coding = asciiLower(head.get_header_value("Transfer-Encoding"));
  if (codings > 1 || (codings == 1 && coding != "chunked"))
    return errorResponse(501, error_code::kNotImplemented,
                         "the only transfer coding understood is chunked");
  return std::nullopt;
}

HttpResponse RequestParser::refusal(const ParseError& ec) const {
  if (refused_) return *refused_;
  if (ec == http::error::header_limit) return headersTooLarge();
  if (ec == http::error::body_limit)
    return errorResponse(413, error_code::kBodyTooLarge, "the body is larger than the limit");
  if (ec == http::error::bad_content_length || ec == http::error::multiple_content_length ||
      ec == http::error::bad_transfer_encoding)
    return errorResponse(400, error_code::kBadRequest, kBadLength);
  return errorResponse(400, error_code::kBadRequest, "the request could not be parsed");
}

void RequestParser::refuse(ParseError& ec, HttpResponse answer) {
  refused_ = std::move(answer);
  ec = http::error::bad_value;  // any error: refusal() answers with refused_
}

void RequestParser::on_request_impl(http::verb, boost::beast::string_view method,
                                    boost::beast::string_view target, int version, ParseError&) {
  head_.method = std::string(method);
  head_.target = std::string(target);
  version_ = version;
}

void RequestParser::on_response_impl(int, boost::beast::string_view, int, ParseError& ec) {
  ec = http::error::bad_version;  // a request parser never reads a status line
}

void RequestParser::on_field_impl(http::field, boost::beast::string_view name,
                                  boost::beast::string_view value, ParseError& ec) {
  ++fieldCount_;
  fieldBytes_ += name.size() + value.size();
  if (!is_header_done()) {
    head_.headers.emplace(std::string(name), std::string(value));
    return;
  }
  // A trailer: it counts with the head's fields, and nothing reads it.
  if (name.size() + value.size() + 2 > kMaxLineBytes) return refuse(ec, lineTooLong());
  if (fieldCount_ > kMaxHeaderCount || fieldBytes_ > kMaxHeaderBytes)
    refuse(ec, headersTooLarge());
}

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& length,
                                      ParseError& ec) {
  // The head is read without a limit (the server answers 413 after it), so
  // Beast has not compared the declared length with the limit set since: a
  // declared length of terabytes must not become a reservation.
  if (!length || !bodyLimit_) return;  // without a limit the body grows as it comes
  if (*length > *bodyLimit_) {
    ec = http::error::body_limit;
    return;
  }
  body_.reserve(*length);
}

size_t RequestParser::on_body_impl(boost::beast::string_view data, ParseError&) {
  body_.append(data.data(), data.size());
  return data.size();
}

size_t RequestParser::on_chunk_body_impl(std::uint64_t, boost::beast::string_view data,
                                         ParseError&) {
  body_.append(data.data(), data.size());
  return data.size();
}

}  // namespace webhooker::server
