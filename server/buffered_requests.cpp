#include "server/buffered_requests.h"

namespace webhooker::server {

bool BufferedRequests::admit(Holder& holder, size_t bytes) {
  const auto now = Clock::now();
  while (held_ - holder.bytes_ + bytes > cap_) {
    if (byLastByte_.empty()) return false;
    const Holder& oldest = *byLastByte_.front();
    if (&oldest == &holder || now - oldest.lastByte_ < stalledAfter_) return false;
    cutOldest();
  }
  hold(holder, bytes);
  return true;
}

void BufferedRequests::hold(Holder& holder, size_t bytes) {
  if (holder.place_) byLastByte_.erase(*holder.place_);
  held_ = held_ - holder.bytes_ + bytes;
  holder.bytes_ = bytes;
  holder.lastByte_ = Clock::now();
  holder.place_ = byLastByte_.insert(byLastByte_.end(), &holder);
  while (held_ > cap_ && byLastByte_.front() != &holder) cutOldest();
  gauge_.Set(static_cast<double>(held_));
}

void BufferedRequests::release(Holder& holder) {
  if (!holder.place_) return;
  byLastByte_.erase(*holder.place_);
  holder.place_.reset();
  held_ -= holder.bytes_;
  holder.bytes_ = 0;
  gauge_.Set(static_cast<double>(held_));
}

void BufferedRequests::cutOldest() {
  Holder& oldest = *byLastByte_.front();
  release(oldest);
  oldest.cut();
}

}  // namespace webhooker::server
