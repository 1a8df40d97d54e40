#include "tests/support/receiver.h"

#include "tests/support/loopback_listen.h"

namespace webhooker::testing {

ScriptedResponse respond(int status, httplib::Headers headers) {
  ScriptedResponse r;
  r.status = status;
  r.headers = std::move(headers);
  return r;
}

ScriptedResponse respondAfter(std::chrono::milliseconds delay, int status) {
  ScriptedResponse r;
  r.status = status;
  r.delay = delay;
  return r;
}

ScriptedResponse neverAnswer() {
  ScriptedResponse r;
  r.neverAnswer = true;
  return r;
}

int unusedLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("unusedLoopbackPort: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("unusedLoopbackPort: bind failed");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

Receiver::Receiver(int port) {
  server_.set_tcp_nodelay(true);
  server_.set_keep_alive_max_count(1);  // see the file comment: prompt shutdown
  server_.set_payload_max_length(64 * 1024 * 1024);
  server_.new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  server_.set_logger([](const httplib::Request&, const httplib::Response&) {});
  const auto handler = [this](const httplib::Request& req, httplib::Response& res) {
    handle(req, res);
  };
  server_.Get(".*", handler);
  server_.Post(".*", handler);
  server_.Put(".*", handler);
  server_.Patch(".*", handler);
  server_.Delete(".*", handler);
  server_.Options(".*", handler);
  port_ = bindLoopbackWithFullBacklog(server_, port);
  if (port_ <= 0) throw std::runtime_error("Receiver: cannot bind a loopback port");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  // stop() is a no-op until the accept loop runs: wait for it.
  for (int i = 0; i < 2000 && !server_.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!server_.is_running()) {
    server_.stop();
    thread_.join();
    throw std::runtime_error("Receiver: server did not start");
  }
}

Receiver::~Receiver() {
  {
    std::lock_guard lock(scriptMutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

std::string Receiver::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void Receiver::push(ScriptedResponse response) {
  std::lock_guard lock(scriptMutex_);
  script_.push_back(std::move(response));
}

void Receiver::script(std::vector<ScriptedResponse> responses) {
  std::lock_guard lock(scriptMutex_);
  for (auto& r : responses) script_.push_back(std::move(r));
}

void Receiver::setDefault(ScriptedResponse response) {
  std::lock_guard lock(scriptMutex_);
  default_ = std::move(response);
}

void Receiver::clearScript() {
  std::lock_guard lock(scriptMutex_);
  script_.clear();
}

std::vector<ReceivedRequest> Receiver::requests() const {
  std::lock_guard lock(scriptMutex_);
  return requests_;
}

size_t Receiver::requestCount() const {
  std::lock_guard lock(scriptMutex_);
  return requests_.size();
}

bool Receiver::waitForRequests(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(scriptMutex_);
  return arrived_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

int Receiver::inFlight() const {
  std::lock_guard lock(scriptMutex_);
  return inFlight_;
}

int Receiver::maxInFlight() const {
  std::lock_guard lock(scriptMutex_);
  return maxInFlight_;
}

void Receiver::handle(const httplib::Request& req, httplib::Response& res) {
  ScriptedResponse answer;
  std::unique_lock lock(scriptMutex_);
  ReceivedRequest r;
  r.at = std::chrono::steady_clock::now();
  r.method = req.method;
  r.path = req.path;
  for (const auto& [name, value] : req.headers) {
    // cpp-httplib adds these itself; they describe the socket.
    if (name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" ||
        name == "LOCAL_PORT")
      continue;
    r.headers.emplace(name, value);
  }
  r.body = req.body;
  if (!script_.empty()) {
    answer = std::move(script_.front());
    script_.pop_front();
  } else {
    answer = default_;
  }
  r.answeredStatus = answer.neverAnswer ? 0 : answer.status;
  // Before the request counts as arrived: a test that waited for it also
  // sees what the hook did.
  if (answer.onArrival) {
    lock.unlock();
    answer.onArrival();
    lock.lock();
  }
  requests_.push_back(std::move(r));
  ++inFlight_;
  maxInFlight_ = std::max(maxInFlight_, inFlight_);
  arrived_.notify_all();
  if (answer.neverAnswer)
    wake_.wait(lock, [&] { return stopping_; });
  else if (answer.delay.count() > 0)
    wake_.wait_for(lock, answer.delay, [&] { return stopping_; });
  --inFlight_;
  lock.unlock();

  res.status = answer.status;
  for (const auto& [name, value] : answer.headers) res.set_header(name, value);
  res.set_content(answer.body, answer.contentType);
}

}  // namespace webhooker::testing
