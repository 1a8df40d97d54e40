#include "net/lookup_threads.h"

#include <algorithm>

#include "base/thread_name.h"

namespace webhooker {

LookupThreads::LookupThreads(size_t threads) {
  for (size_t i = 0; i < std::max<size_t>(threads, 1); ++i)
    threads_.emplace_back([this](std::stop_token stop) { work(stop); });
}

LookupThreads::~LookupThreads() {
  for (auto& t : threads_) t.request_stop();
  queued_.notify_all();
  threads_.clear();  // joins
}

std::optional<Result<IpAddress>> LookupThreads::run(Lookup lookup, Deadline deadline) {
  auto job = std::make_shared<Job>();
  job->lookup = std::move(lookup);
  {
    MutexLock lock(queueMutex_);
    queue_.push_back(job);
  }
  queued_.notify_one();
  MutexLock lock(job->mutex);
  if (!job->answered.wait_until(lock, deadline,
                                [&]() REQUIRES(job->mutex) { return job->answer.has_value(); })) {
    job->abandoned = true;
    return std::nullopt;
  }
  return std::move(*job->answer);
}

void LookupThreads::work(std::stop_token stop) {
  nameThisThread("wh-dns");
  while (true) {
    std::shared_ptr<Job> job;
    {
      MutexLock lock(queueMutex_);
      queued_.wait(lock, stop, [&]() REQUIRES(queueMutex_) { return !queue_.empty(); });
      if (stop.stop_requested()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    {
      MutexLock lock(job->mutex);
      if (job->abandoned) continue;  // its caller's deadline passed while it waited
    }
    Result<IpAddress> answer = job->lookup();
    {
      MutexLock lock(job->mutex);
      job->answer = std::move(answer);
    }
    job->answered.notify_one();
  }
}

}  // namespace webhooker
