// RequestParser: one request, read into an HttpRequest within the front
// door's limits on what a request may make the server hold. Beast's parser
// reads the grammar; this class keeps what it hands over and refuses:
//  - a request line or header line over 8 KiB (414, 400), more than 256
//    header fields or 64 KiB of them (431) — trailer fields count with the
//    head's, and are read and dropped;
//  - a folded header line (obs-fold): a proxy that unfolds it differently
//    reads other headers than we do (400);
//  - a chunk line or trailer section over kMaxFramingLine, and chunk framing
//    (sizes, extensions, line ends, trailers) over kMaxFramingBytes in all
//    (400): neither is body, so neither may cost what a body may;
//  - a body over its limit (413).
// refusedHead() adds what can be judged once the head is whole: framing a
// proxy may read differently (400), codings we do not read (501).
//
// The caller feeds bytes as they arrive and keeps at most bufferLimit() of
// them unparsed: an element (the head, a chunk line, the trailers) is parsed
// only when it is whole, so that bound is what one request can hold besides
// its body.
//
// Threading: one thread at a time. Errors: feed() reports a refusal as an
// error code, and refusal() turns it into the answer (the JSON error shape).
#pragma once

#include <boost/beast/http/basic_parser.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "server/http_message.h"

namespace webhooker::server {

class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  using ParseError = boost::beast::error_code;

  // cpp-httplib's limits, which the hostile input table was written
  // against: a request line or header line of 8 KiB, 256 headers of 64 KiB
  // in all (ingest stores every header).
  static constexpr size_t kMaxLineBytes = 8 * 1024;
  static constexpr size_t kMaxHeaderCount = 256;
  static constexpr size_t kMaxHeaderBytes = 64 * 1024;
  // What the head may take in the read buffer: the headers, the request
  // line and the separators.
  static constexpr size_t kHeadLimit = kMaxHeaderBytes + kMaxLineBytes + 2 * kMaxHeaderCount * 4;
  // A chunk line or the trailer section, whole; also the body's read room.
  static constexpr size_t kMaxFramingLine = 16 * 1024;
  // Chunk sizes, extensions, line ends and trailers of one body, in all.
  static constexpr size_t kMaxFramingBytes = 64 * 1024;

  RequestParser();

  // Parses what it can of `bytes`; returns how many it used. `ec` is
  // http::error::need_more when the next element is not whole yet.
  size_t feed(boost::asio::const_buffer bytes, ParseError& ec);
  // How many unparsed bytes the caller may buffer in the current phase.
  size_t bufferLimit() const { return is_header_done() ? kMaxFramingLine : kHeadLimit; }

  // The refusals that need the whole head (see above); nullopt if none.
  std::optional<HttpResponse> refusedHead(const HttpRequest& head) const;
  // The answer to an error feed() reported.
  HttpResponse refusal(const ParseError& ec) const;

  // The head, taken once is_header_done(): method, target and headers.
  HttpRequest takeHead() { return std::move(head_); }
  // Set after the head: the body's limit for this request's route. A
  // declared length over it is refused (body_limit, a 413) before any room
  // is made for the body.
  void setBodyLimit(size_t bytes) {
    bodyLimit_ = bytes;
    body_limit(bytes);
  }
  // The body: taken when is_done(); its bytes read so far; what it holds in
  // memory (its declared length from the start, so that a body is admitted
  // at its full size).
  std::string takeBody() { return std::move(body_); }
  size_t bodyBytesRead() const { return body_.size(); }
  size_t bodyBytesHeld() const {
    const uint64_t declared = is_header_done() ? content_length().value_or(0) : 0;
    return std::max<size_t>(body_.capacity(), static_cast<size_t>(declared));
  }
  int version() const { return version_; }

 private:
  void on_request_impl(boost::beast::http::verb, boost::beast::string_view method,
                       boost::beast::string_view target, int version, ParseError& ec) override;
  void on_response_impl(int, boost::beast::string_view, int, ParseError& ec) override;
  void on_field_impl(boost::beast::http::field, boost::beast::string_view name,
                     boost::beast::string_view value, ParseError& ec) override;
  void on_header_impl(ParseError&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, ParseError&) override;
  size_t on_body_impl(boost::beast::string_view data, ParseError&) override;
  void on_chunk_header_impl(std::uint64_t, boost::beast::string_view, ParseError&) override {}
  size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view data,
                            ParseError&) override;
  void on_finish_impl(ParseError&) override {}

  // Sets `ec` to a refusal of our own, answered with `answer`.
  void refuse(ParseError& ec, HttpResponse answer);

  HttpRequest head_;
  int version_ = 11;
  size_t fieldCount_ = 0;  // head and trailer fields
  size_t fieldBytes_ = 0;
  bool lastHeadByteWasLf_ = false;
  std::string body_;
  size_t bodyWireBytes_ = 0;  // body data and chunk framing, as consumed
  std::optional<uint64_t> bodyLimit_;  // setBodyLimit()'s
  std::optional<HttpResponse> refused_;
};

}  // namespace webhooker::server
