#include "server/buffered_requests.h"

#include <vector>

namespace webhooker::server {

bool BufferedRequests::admit(Holder& holder, size_t bytes) {
  const size_t wanted = held_ - holder.bytes_ + bytes;
  if (wanted > cap_) {
    // Who gives way, longest silent first: the stalled, and those holding
    // more than this request asks for. Nobody is cut unless the room is
    // found, so a refusal costs no other request anything.
    const auto now = Clock::now();
    std::vector<Holder*> giving;
    size_t freed = 0;
    for (Holder* other : byLastByte_) {
      if (wanted - freed <= cap_) break;
      if (other == &holder) continue;
      if (now - other->lastByte_ >= stalledAfter_ || other->bytes_ > bytes) {
        giving.push_back(other);
        freed += other->bytes_;
      }
    }
    if (wanted - freed > cap_) return false;
    for (Holder* other : giving) cutOff(*other);
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
  while (held_ > cap_ && byLastByte_.front() != &holder) cutOff(*byLastByte_.front());
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

void BufferedRequests::cutOff(Holder& holder) {
  release(holder);
  holder.cut();
}

}  // namespace webhooker::server
