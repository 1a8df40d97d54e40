#include "server/buffered_requests.h"

namespace webhooker::server {

void BufferedRequests::hold(Holder& holder, size_t bytes) {
  if (holder.place_) byLastByte_.erase(*holder.place_);
  held_ = held_ - holder.bytes_ + bytes;
  holder.bytes_ = bytes;
  holder.place_ = byLastByte_.insert(byLastByte_.end(), &holder);
  while (held_ > cap_ && byLastByte_.front() != &holder) {
    Holder& oldest = *byLastByte_.front();
    release(oldest);
    oldest.cut();
  }
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

}  // namespace webhooker::server
