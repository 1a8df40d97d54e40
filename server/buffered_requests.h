// BufferedRequests: the bytes unfinished requests hold — their read buffers,
// and their bodies as declared or as read so far — summed over every
// connection under one cap (--max-buffered-mb). A body is admitted before it
// is read only if it fits, after requests that give way are cut to make
// room: those silent for `stalledAfter` or longer, and those holding more
// bytes than it asks for, longest silent first; if they cannot make room it
// is refused and nobody is cut. When reads take the sum over the cap anyway
// (a chunked body declares no length), the requests silent longest are cut.
// So a flood of big bodies, stalled or fresh, cannot hold the memory a
// small live request needs (a big one may wait for a stalled one to go).
//
// Threading: the event loop's thread only, no locking. Ownership: holders
// are not owned; a holder releases itself before it is destroyed.
#pragma once

#include <prometheus/gauge.h>

#include <chrono>
#include <cstddef>
#include <list>
#include <optional>

namespace webhooker::server {

class BufferedRequests {
 public:
  using Clock = std::chrono::steady_clock;

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
    Clock::time_point lastByte_;
    std::optional<std::list<Holder*>::iterator> place_;  // set while it holds bytes
  };

  // `gauge` shows the sum (webhooker_http_buffered_bytes).
  BufferedRequests(size_t cap, std::chrono::milliseconds stalledAfter, prometheus::Gauge& gauge)
      : cap_(cap), stalledAfter_(stalledAfter), gauge_(gauge) {}
  BufferedRequests(const BufferedRequests&) = delete;
  BufferedRequests& operator=(const BufferedRequests&) = delete;

  // Whether `holder` may grow to `bytes`, cutting stalled others and others
  // holding more than `bytes` to make room; if so it holds them from now on.
  bool admit(Holder& holder, size_t bytes);
  // `holder` just received a byte and now holds `bytes`: it becomes the
  // most recent. While the sum is over the cap, the least recent others are
  // released and cut.
  void hold(Holder& holder, size_t bytes);
  // `holder` holds nothing any more (its request is read, or gone).
  void release(Holder& holder);

 private:
  void cutOff(Holder& holder);

  const size_t cap_;
  const std::chrono::milliseconds stalledAfter_;
  prometheus::Gauge& gauge_;
  size_t held_ = 0;
  std::list<Holder*> byLastByte_;  // the longest silent first
};

}  // namespace webhooker::server
