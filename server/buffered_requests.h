// BufferedRequests: the bytes unfinished requests hold — their read buffers,
// and their bodies as declared or as read so far — summed over every
// connection under one cap (--max-buffered-mb). A request whose body does not
// fit is refused before it is read (the caller asks fits()); when reads take
// the sum over the cap anyway (a chunked body declares no length), the
// requests that have gone longest without a byte are cut first, so a flood
// of stalled bodies cannot hold the memory a live request needs.
//
// Threading: the event loop's thread only, no locking. Ownership: holders
// are not owned; a holder releases itself before it is destroyed.
#pragma once

#include <prometheus/gauge.h>

#include <cstddef>
#include <list>
#include <optional>

namespace webhooker::server {

class BufferedRequests {
 public:
  class Holder {
   public:
    // Told after its bytes were released to make room: stop reading, give
    // them back, and close.
    virtual void cut() = 0;

   protected:
    virtual ~Holder() = default;

   private:
    friend class BufferedRequests;
    size_t bytes_ = 0;
    std::optional<std::list<Holder*>::iterator> place_;  // set while it holds bytes
  };

  // `gauge` shows the sum (webhooker_http_buffered_bytes).
  BufferedRequests(size_t cap, prometheus::Gauge& gauge) : cap_(cap), gauge_(gauge) {}
  BufferedRequests(const BufferedRequests&) = delete;
  BufferedRequests& operator=(const BufferedRequests&) = delete;

  // Whether `holder` may grow to `bytes` within the cap.
  bool fits(const Holder& holder, size_t bytes) const {
    return held_ - holder.bytes_ + bytes <= cap_;
  }
  // `holder` just received a byte and now holds `bytes`: it becomes the
  // most recent. While the sum is over the cap, the least recent others are
  // released and cut.
  void hold(Holder& holder, size_t bytes);
  // `holder` holds nothing any more (its request is read, or gone).
  void release(Holder& holder);

 private:
  const size_t cap_;
  prometheus::Gauge& gauge_;
  size_t held_ = 0;
  std::list<Holder*> byLastByte_;  // the longest silent first
};

}  // namespace webhooker::server
