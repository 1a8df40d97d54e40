// The front door's request parser (server/request_parser), fed as the
// connection feeds it: reads of sizes the input chooses, never more than the
// parser lets the caller buffer, the head first, then the body under its
// limit. Each input is one request, parsed twice: in the input's pieces and
// in the largest reads allowed. Properties:
//  - a parser that needs more bytes never has a full buffer: bufferLimit()
//    is what one request holds besides its body, so a request that would
//    need more is refused (a 10 MiB chunk extension, a trailer line);
//  - feed() never uses more than it was given;
//  - every refusal is an answer of the JSON error shape with a 4xx or 501
//    status, and so is every refusal of a whole head;
//  - a finished request's body is within its limit, and the chunk framing
//    read with it within kMaxFramingBytes;
//  - how the bytes were split changes no request: if one parse finishes the
//    other is not refused, and if both finish they have the same method,
//    target, headers and body. (Input that ends mid-request may be refused
//    in one split and still awaited in the other: Beast judges a partial
//    head's bad bytes as they come.)
#include <fuzzer/FuzzedDataProvider.h>

#include <nlohmann/json.hpp>

#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "server/request_parser.h"

namespace {

using webhooker::server::HttpRequest;
using webhooker::server::HttpResponse;
using webhooker::server::RequestParser;
namespace http = boost::beast::http;

constexpr size_t kBodyLimit = 4096;

struct Outcome {
  bool done = false;
  int refusedWith = 0;  // the refusal's status, if refused
  HttpRequest head;
  std::string body;
};

void checkRefusal(const HttpResponse& answer) {
  FUZZ_CHECK((answer.status >= 400 && answer.status < 500) || answer.status == 501);
  const auto body = nlohmann::json::parse(answer.body, nullptr, false);
  FUZZ_CHECK(body.is_object() && body.contains("error") && body["error"].contains("code") &&
             body["error"]["code"].is_string() && body["error"].contains("message"));
}

// Parses `input` as the connection does; `next` gives the size of each read
// (at most what the parser lets the caller buffer, at least 1).
template <typename NextRead>
Outcome parse(const std::string& input, NextRead next) {
  RequestParser parser;
  Outcome out;
  std::string buffered;  // read, not yet used by the parser
  size_t read = 0;
  bool headSeen = false;
  size_t bodyWire = 0;  // used after the head: body data and chunk framing
  while (true) {
    // The parser's phase after the head is the body, under its limit.
    if (!headSeen && parser.is_header_done()) {
      headSeen = true;
      out.head = parser.takeHead();
      if (auto refused = parser.refusedHead(out.head)) {
        checkRefusal(*refused);
        out.refusedWith = refused->status;
        return out;
      }
      parser.setBodyLimit(kBodyLimit);
    }
    if (headSeen && parser.is_done()) break;
    boost::beast::error_code ec;
    size_t used = 0;
    if (!buffered.empty()) {
      used = parser.feed(boost::asio::buffer(buffered), ec);
      FUZZ_CHECK(used <= buffered.size());
      buffered.erase(0, used);
      if (headSeen) bodyWire += used;
    }
    if (ec && ec != http::error::need_more) {
      const HttpResponse answer = parser.refusal(ec);
      checkRefusal(answer);
      out.refusedWith = answer.status;
      return out;
    }
    if (used > 0 && !buffered.empty()) continue;  // more may parse at once
    if (headSeen && parser.is_done()) break;
    if (!headSeen && parser.is_header_done()) continue;
    // It needs more: the buffer must have room for it.
    FUZZ_CHECK(buffered.size() < parser.bufferLimit());
    if (read == input.size()) return out;  // the client stopped: no request
    const size_t room = parser.bufferLimit() - buffered.size();
    const size_t n = std::min({next(room), room, input.size() - read});
    buffered.append(input, read, std::max<size_t>(n, 1));
    read += std::max<size_t>(n, 1);
  }
  out.done = true;
  out.body = parser.takeBody();
  FUZZ_CHECK(out.body.size() <= kBodyLimit);
  FUZZ_CHECK(bodyWire >= out.body.size());
  FUZZ_CHECK(bodyWire - out.body.size() <= RequestParser::kMaxFramingBytes);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  std::vector<size_t> reads;
  for (int i = 0; i < 16; ++i) reads.push_back(provider.ConsumeIntegralInRange<size_t>(1, 4096));
  const std::string input = provider.ConsumeRemainingBytesAsString();

  size_t at = 0;
  const Outcome pieces = parse(input, [&](size_t) { return reads[at++ % reads.size()]; });
  const Outcome whole = parse(input, [](size_t room) { return room; });

  FUZZ_CHECK(!(pieces.done && whole.refusedWith != 0));
  FUZZ_CHECK(!(whole.done && pieces.refusedWith != 0));
  if (pieces.done && whole.done) {
    FUZZ_CHECK(pieces.head.method == whole.head.method);
    FUZZ_CHECK(pieces.head.target == whole.head.target);
    FUZZ_CHECK(pieces.head.headers == whole.head.headers);
    FUZZ_CHECK(pieces.body == whole.body);
  }
  return 0;
}
