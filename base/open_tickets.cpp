#include "base/open_tickets.h"

namespace webhooker {

OpenTickets::Ticket OpenTickets::open() {
  uint64_t number = 0;
  {
    MutexLock lock(mutex_);
    number = ++opened_;
    held_.insert(number);
  }
  class Held {
   public:
    Held(OpenTickets& tickets, uint64_t number) : tickets_(tickets), number_(number) {}
    ~Held() { tickets_.giveBack(number_); }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;

   private:
    OpenTickets& tickets_;
    const uint64_t number_;
  };
  return std::make_shared<const Held>(*this, number);
}

void OpenTickets::giveBack(uint64_t number) {
  {
    MutexLock lock(mutex_);
    held_.erase(number);
  }
  givenBack_.notify_all();
}

bool OpenTickets::waitForEarlier(std::optional<std::chrono::steady_clock::time_point> deadline) {
  MutexLock lock(mutex_);
  const uint64_t last = opened_;
  const auto earlierGiven = [&]() REQUIRES(mutex_) {
    return held_.empty() || *held_.begin() > last;
  };
  if (!deadline) {
    givenBack_.wait(lock, earlierGiven);
    return true;
  }
  return givenBack_.wait_until(lock, *deadline, earlierGiven);
}

}  // namespace webhooker
