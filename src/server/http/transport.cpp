#include "server/http/transport.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace keel::server::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

long raise_open_file_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return -1;
  if (r.rlim_cur < r.rlim_max) {
    rlimit want = r;
    want.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) r = want;
  }
  return r.rlim_cur == RLIM_INFINITY ? LONG_MAX : static_cast<long>(r.rlim_cur);
}

namespace {

// A fixed set of request workers over one queue; a full queue refuses (the caller answers 503).
class WorkerPool {
 public:
  void start(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  bool submit(std::function<void()> job, size_t max_queued) {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= max_queued) return false;
    queue_.push_back(std::move(job));
    cv_.notify_one();
    return true;
  }
  // Runs what is queued, then joins.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

std::string_view reason_phrase(int status) {
  if (status == 499) return "Client Closed Request";
  beast::string_view r = bhttp::obsolete_reason(bhttp::int_to_status(static_cast<unsigned>(status)));
  return {r.data(), r.size()};
}

// The status line and headers; `framing` is the Content-Length or Transfer-Encoding line ("" for a
// close-delimited body).
std::string serialize_head(const Response& res, const std::string& framing, bool keep_alive) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", res.status, reason_phrase(res.status));
  if (!res.content_type.empty()) out += fmt::format("Content-Type: {}\r\n", res.content_type);
  for (const Header& h : res.headers) out += fmt::format("{}: {}\r\n", h.name, h.value);
  out += framing;
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return out;
}

// The request target of a head that may not have parsed: the second word of its first line ("" if none).
std::string target_of(const beast::flat_buffer& buffer) {
  const auto data = buffer.data();
  std::string_view s(static_cast<const char*>(data.data()), std::min<size_t>(data.size(), 8192));
  size_t a = s.find(' ');
  if (a == std::string_view::npos) return {};
  size_t b = s.find_first_of(" \r\n", a + 1);
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(a + 1, b - a - 1));
}

std::string path_of(const std::string& target) {
  return target.substr(0, target.find('?'));
}

}  // namespace

class Session;

struct Transport::Impl {
  Impl(TransportOptions o, Handler h, ErrorResponder e)
      : options(std::move(o)), handler(std::move(h)), errors(std::move(e)) {}

  void accept();
  void add(const std::shared_ptr<Session>& s, uint64_t id) {
    std::lock_guard lock(mu);
    sessions[id] = s;
  }
  void remove(uint64_t id) {
    std::lock_guard lock(mu);
    sessions.erase(id);
  }
  void stop_sessions();

  TransportOptions options;
  Handler handler;
  ErrorResponder errors;
  std::atomic<bool> stopping{false};
  bool accept_paused = false;  // stop_accepting(); read and written on accept_strand
  WorkerPool workers;
  // Declared before the io_context: sessions it still holds unregister themselves when it is destroyed.
  mutable std::mutex mu;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> sessions;
  uint64_t next_id = 0;
  std::chrono::steady_clock::time_point last_accept_warning{};

  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  asio::strand<asio::io_context::executor_type> accept_strand{asio::make_strand(ioc)};
  tcp::acceptor acceptor{accept_strand};
  asio::steady_timer accept_retry{accept_strand};
  std::vector<std::thread> io_threads;
};

// One connection. Everything but write_blocking() runs on the connection's strand (its socket's executor).
// Phases: reading (idle, head, body), handling (a worker has the request; nothing is read), closing.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Transport::Impl& t, tcp::socket socket, uint64_t id)
      : t_(t), socket_(std::move(socket)), timer_(socket_.get_executor()), id_(id) {}
  ~Session() { t_.remove(id_); }
  auto get_executor() { return socket_.get_executor(); }

  void start() {
    error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);  // stream chunks leave at once
    auto ep = socket_.remote_endpoint(ec);
    if (!ec) {
      remote_addr_ = ep.address().to_string();
      remote_port_ = ep.port();
    }
    probe_ = std::make_shared<ClientConnection>(socket_.native_handle());
    await_request(/*after_response=*/false);
  }

  // The transport stops: a connection no worker holds closes now; a handled one closes after its response.
  void on_stop() {
    if (phase_ != Phase::handling) close();
  }

  // From a worker: writes `bytes` and waits until they are in the socket. False when the connection is gone
  // or the write timed out (the socket is then shut both ways, which the request's probe sees).
  bool write_blocking(std::string bytes) {
    auto data = std::make_shared<std::string>(std::move(bytes));
    auto done = std::make_shared<std::promise<bool>>();
    std::future<bool> result = done->get_future();
    asio::post(socket_.get_executor(), [self = shared_from_this(), data, done] {
      if (self->dead_ || self->closed_) {
        done->set_value(false);
        return;
      }
      self->arm(self->t_.options.write_timeout, "write");
      asio::async_write(self->socket_, asio::buffer(*data), [self, data, done](error_code ec, size_t) {
        self->disarm();
        if (ec) self->kill();
        done->set_value(!ec);
      });
    });
    try {
      return result.get();
    } catch (const std::future_error&) {  // the io_context went away with the write
      return false;
    }
  }

 private:
  enum class Phase { reading, handling, closing };

  class StreamWriter final : public BodyWriter {
   public:
    StreamWriter(Session& s, bool chunked) : s_(s), chunked_(chunked) {}
    bool write(std::string_view bytes) override {
      if (!ok_) return false;
      if (bytes.empty()) return true;
      std::string framed;
      if (chunked_) {
        framed = fmt::format("{:x}\r\n", bytes.size());
        framed.append(bytes);
        framed.append("\r\n");
      } else {
        framed.assign(bytes);
      }
      ok_ = s_.write_blocking(std::move(framed));
      return ok_;
    }
    bool ok() const { return ok_; }

   private:
    Session& s_;
    bool chunked_;
    bool ok_ = true;
  };

  // Deadline for the current phase; when it passes, the pending operation is cancelled and sees timed_out_.
  void arm(std::chrono::milliseconds d, const char* what) {
    timed_out_ = nullptr;
    timer_.expires_after(d);
    timer_.async_wait([self = shared_from_this(), gen = ++timer_gen_, what](error_code ec) {
      if (ec || gen != self->timer_gen_) return;
      self->timed_out_ = what;
      error_code ignored;
      if (self->phase_ == Phase::handling) self->socket_.shutdown(tcp::socket::shutdown_both, ignored);
      self->socket_.cancel(ignored);
    });
  }
  void disarm() {
    ++timer_gen_;
    timer_.cancel();
  }

  void await_request(bool after_response) {
    phase_ = Phase::reading;
    path_.clear();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(std::min<size_t>(t_.options.max_header_bytes, UINT32_MAX)));
    // on_head checks Content-Length itself, knowing the path (the error's dialect); boost::none would refuse
    // every length.
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (t_.stopping) return close();
    if (buffer_.size() == 0)
      buffer_.shrink_to_fit();  // an idle connection keeps no buffer from a large request
    if (!after_response || buffer_.size() > 0) return read_head();
    // Idle between requests: wait for the next one's first bytes. A real read, not async_wait(wait_read):
    // that can wake on a stale readiness event with nothing to read, which would start the head's deadline
    // early.
    arm(t_.options.idle_timeout, "idle");
    socket_.async_read_some(buffer_.prepare(1024), [self = shared_from_this()](error_code ec, size_t n) {
      if (ec || self->timed_out_) return self->close();  // EOF, a reset, the idle timeout, or stop()
      self->buffer_.commit(n);
      self->read_head();
    });
  }

  void read_head() {
    arm(t_.options.head_timeout, "head");  // for the whole head: a head that trickles is cut
    bhttp::async_read_header(socket_, buffer_, *parser_,
                             [self = shared_from_this()](error_code ec, size_t) { self->on_head(ec); });
  }

  void on_head(error_code ec) {
    if (ec) return read_failed(ec, /*in_head=*/true);
    const auto& h = parser_->get();
    target_ = std::string(h.target());
    path_ = path_of(target_);
    if (h.version() != 10 && h.version() != 11)
      return fail(505, "http_version_not_supported", "only HTTP/1.0 and HTTP/1.1 are served");
    auto te = h.find(bhttp::field::transfer_encoding);
    if (te != h.end() && !beast::iequals(te->value(), "chunked"))
      return fail(501, "unsupported_transfer_encoding",
                  fmt::format("Transfer-Encoding '{}' is not supported; send Content-Length or chunked",
                              std::string(te->value())));
    const auto length = parser_->content_length();
    if (length && *length > t_.options.max_body_bytes)
      return fail(
          413, "body_too_large",
          fmt::format("the request body is {} bytes; the limit is {}", *length, t_.options.max_body_bytes));
    parser_->body_limit(t_.options.max_body_bytes);  // a chunked body
    const auto verb = h.method();
    if (!length && !parser_->chunked() &&
        (verb == bhttp::verb::post || verb == bhttp::verb::put || verb == bhttp::verb::patch))
      return fail(411, "length_required", "a request with a body needs Content-Length or chunked encoding");
    if (parser_->is_done()) return dispatch();
    if (h.version() == 11 && beast::iequals(h[bhttp::field::expect], "100-continue")) {
      auto cont = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      arm(t_.options.write_timeout, "write");
      asio::async_write(socket_, asio::buffer(*cont),
                        [self = shared_from_this(), cont](error_code e, size_t) {
                          if (e) return self->close();
                          self->read_body();
                        });
      return;
    }
    read_body();
  }

  void read_body() {
    arm(t_.options.body_timeout, "body");  // again after every read: a body that stalls is cut
    bhttp::async_read_some(socket_, buffer_, *parser_, [self = shared_from_this()](error_code ec, size_t) {
      if (ec) return self->read_failed(ec, /*in_head=*/false);
      if (self->parser_->is_done()) return self->dispatch();
      self->read_body();
    });
  }

  void read_failed(error_code ec, bool in_head) {
    if (path_.empty() && parser_) {  // the start line may have parsed (and left the buffer) before the error
      std::string target(parser_->get().target());
      path_ = path_of(target.empty() ? target_of(buffer_) : target);
    }
    if (timed_out_) {
      if (in_head && buffer_.size() == 0) return close();  // nothing was sent: nobody to answer
      return fail(
          408, "request_timeout",
          in_head
              ? fmt::format("the request head did not arrive within {} ms", t_.options.head_timeout.count())
              : fmt::format("the request body stalled for {} ms", t_.options.body_timeout.count()));
    }
    if (ec == bhttp::error::header_limit)
      return fail(431, "headers_too_large",
                  fmt::format("the request head is larger than {} bytes", t_.options.max_header_bytes));
    if (ec == bhttp::error::body_limit)
      return fail(413, "body_too_large",
                  fmt::format("the request body is larger than {} bytes", t_.options.max_body_bytes));
    // The peer went away (before a request, or in the middle of one): nobody to answer.
    if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
        ec.category() != bhttp::make_error_code(bhttp::error::bad_target).category())
      return close();
    fail(400, "bad_request", fmt::format("malformed request: {}", ec.message()));
  }

  // A transport error: the response in the path's dialect, then a lingering close.
  void fail(int status, const std::string& code, const std::string& message) {
    disarm();
    phase_ = Phase::closing;
    Response res = t_.errors(status, code, message, path_);
    res.status = status;
    auto bytes = std::make_shared<std::string>(
        serialize_head(res, fmt::format("Content-Length: {}\r\n", res.body.size()), false) + res.body);
    arm(t_.options.write_timeout, "write");
    asio::async_write(socket_, asio::buffer(*bytes),
                      [self = shared_from_this(), bytes](error_code ec, size_t) {
                        if (ec || self->t_.stopping) return self->close();
                        self->linger();
                      });
  }

  // Our side is done: FIN, then drain what the client still sends (so it reads our response rather than a
  // reset) until it closes too or the linger time passes.
  void linger() {
    phase_ = Phase::closing;
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    if (!drain_) drain_ = std::make_unique<std::array<char, 16384>>();
    arm(t_.options.linger, "linger");
    drain();
  }
  void drain() {
    socket_.async_read_some(asio::buffer(*drain_), [self = shared_from_this()](error_code ec, size_t) {
      if (ec) return self->close();
      self->drain();
    });
  }

  void dispatch() {
    disarm();
    phase_ = Phase::handling;
    ++requests_;
    bhttp::request<bhttp::string_body> msg = parser_->release();
    parser_.reset();
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    Request req;
    req.method = std::string(msg.method_string());
    head_only_ = req.method == "HEAD";
    if (head_only_) req.method = "GET";
    req.target = target_;
    req.path = path_;
    if (size_t q = target_.find('?'); q != std::string::npos) req.query = target_.substr(q + 1);
    for (const auto& f : msg) req.headers.push_back({std::string(f.name_string()), std::string(f.value())});
    req.body = std::move(msg.body());
    req.remote_addr = remote_addr_;
    req.remote_port = remote_port_;
    req.connection = probe_;
    auto job = [self = shared_from_this(), req = std::move(req)]() mutable { self->handle(req); };
    if (!t_.workers.submit(std::move(job), t_.options.max_queued)) {
      phase_ = Phase::reading;
      fail(503, "server_busy", "too many requests are waiting for a worker; retry in a moment");
    }
  }

  // On a worker: the handler, then its response.
  void handle(const Request& req) {
    Response res;
    try {
      t_.handler(req, res);
    } catch (const std::exception& e) {
      spdlog::error("request failed: {}", e.what());
      res = t_.errors(500, "internal_error", e.what(), req.path);
      res.status = 500;
    }
    bool ok;
    if (!res.stream) {
      std::string bytes =
          serialize_head(res, fmt::format("Content-Length: {}\r\n", res.body.size()), keep_alive_);
      if (!head_only_) bytes += res.body;
      ok = write_blocking(std::move(bytes));
    } else {
      const bool chunked = version_ == 11;
      if (!chunked) keep_alive_ = false;  // an HTTP/1.0 stream ends with the connection
      ok = write_blocking(serialize_head(res, chunked ? "Transfer-Encoding: chunked\r\n" : "", keep_alive_));
      if (ok && !head_only_) {
        StreamWriter w(*this, chunked);
        try {
          ok = res.stream(w);
        } catch (const std::exception& e) {
          spdlog::error("streamed response failed: {}", e.what());
          ok = false;
        }
        ok = ok && w.ok();
        if (ok && chunked) ok = write_blocking("0\r\n\r\n");
      }
    }
    res = Response{};  // the handler's state goes before the connection moves on
    asio::post(socket_.get_executor(), [self = shared_from_this(), ok] { self->finished(ok); });
  }

  void finished(bool ok) {
    phase_ = Phase::reading;
    if (!ok || dead_ || t_.stopping) return close();
    if (!keep_alive_) return linger();
    await_request(/*after_response=*/true);
  }

  // The connection is broken: shut it both ways, so the request's probe sees it gone; the descriptor closes
  // once no worker holds it.
  void kill() {
    dead_ = true;
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
  }

  void close() {
    if (closed_) return;
    if (phase_ == Phase::handling) return kill();
    closed_ = true;
    disarm();
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  Transport::Impl& t_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  uint64_t id_;
  uint64_t timer_gen_ = 0;
  const char* timed_out_ = nullptr;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::unique_ptr<std::array<char, 16384>> drain_;
  std::shared_ptr<ClientConnection> probe_;
  std::string remote_addr_, target_, path_;
  int remote_port_ = 0;
  Phase phase_ = Phase::reading;
  uint64_t requests_ = 0;
  unsigned version_ = 11;
  bool keep_alive_ = false, head_only_ = false, dead_ = false, closed_ = false;
};

void Transport::Impl::accept() {
  acceptor.async_accept(asio::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
    if (stopping || accept_paused) return;  // (a connection accepted meanwhile closes with `socket`)
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of descriptors (EMFILE) and the like: say so at most once a second, retry shortly.
      auto now = std::chrono::steady_clock::now();
      if (now - last_accept_warning > std::chrono::seconds(1)) {
        size_t open = 0;
        {
          std::lock_guard lock(mu);
          open = sessions.size();
        }
        spdlog::warn("accept failed: {} ({} connections open); retrying", ec.message(), open);
        last_accept_warning = now;
      }
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](error_code e) {
        if (!e && !stopping && !accept_paused) accept();
      });
      return;
    }
    uint64_t id = next_id++;
    auto session = std::make_shared<Session>(*this, std::move(socket), id);
    add(session, id);
    asio::post(session->get_executor(), [session] { session->start(); });
    accept();
  });
}

void Transport::Impl::stop_sessions() {
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard lock(mu);
    for (auto& [id, w] : sessions)
      if (auto s = w.lock()) live.push_back(std::move(s));
  }
  for (auto& s : live) asio::post(s->get_executor(), [s] { s->on_stop(); });
}

Transport::Transport(TransportOptions options, Handler handler, ErrorResponder errors)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(errors))) {}

Transport::~Transport() {
  stop();
}

void Transport::start() {
  Impl& t = *impl_;
  long files = raise_open_file_limit();
  if (files > 0 && files < 4096)
    spdlog::warn("only {} open files are allowed (ulimit -n): that bounds the connections served at once",
                 files);
  error_code ec;
  if (t.options.listen_fd >= 0) {  // inherited: already bound and listening
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (::getsockname(t.options.listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw_error(ErrorCode::invalid_argument, "listening socket {}: {}", t.options.listen_fd,
                  std::strerror(errno));
    t.acceptor.assign(addr.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), t.options.listen_fd, ec);
    if (ec)
      throw_error(ErrorCode::invalid_argument, "listening socket {}: {}", t.options.listen_fd, ec.message());
  }
  auto cannot = [&](const std::string& why) {
    if (t.options.port == 0)
      throw_error(ErrorCode::invalid_argument, "cannot listen on {} (any port): {}", t.options.host, why);
    throw_error(
        ErrorCode::invalid_argument,
        "cannot listen on {}:{}: the address is in use or not available (try another --port or --host): {}",
        t.options.host, t.options.port, why);
  };
  if (t.options.listen_fd < 0) {
    tcp::resolver resolver(t.ioc);
    auto found = resolver.resolve(t.options.host, std::to_string(t.options.port), tcp::resolver::passive, ec);
    if (ec || found.empty()) cannot(ec ? ec.message() : "no such address");
    tcp::endpoint ep = found.begin()->endpoint();
    t.acceptor.open(ep.protocol(), ec);
    if (!ec) t.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) t.acceptor.bind(ep, ec);
    if (!ec) t.acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) cannot(ec.message());
  }
  port_ = t.acceptor.local_endpoint().port();
  t.workers.start(std::max(1, t.options.workers));
  t.work.emplace(t.ioc.get_executor());
  asio::post(t.accept_strand, [&t] { t.accept(); });
  for (int i = 0; i < std::max(1, t.options.io_threads); ++i)
    t.io_threads.emplace_back([&t] { t.ioc.run(); });
}

void Transport::stop_accepting() {
  Impl& t = *impl_;
  if (t.io_threads.empty()) return;
  std::promise<void> done;
  asio::post(t.accept_strand, [&t, &done] {
    t.accept_paused = true;
    error_code ec;
    t.acceptor.cancel(ec);  // the pending accept ends with operation_aborted
    t.accept_retry.cancel();
    done.set_value();
  });
  done.get_future().wait();
}

int Transport::listen_fd() const {
  return const_cast<tcp::acceptor&>(impl_->acceptor).native_handle();
}

void Transport::stop() {
  Impl& t = *impl_;
  if (t.io_threads.empty() || t.stopping.exchange(true)) return;
  std::promise<void> closed;
  asio::post(t.accept_strand, [&t, &closed] {
    error_code ignored;
    t.acceptor.close(ignored);
    t.accept_retry.cancel();
    closed.set_value();
  });
  closed.get_future().wait();
  t.stop_sessions();  // idle and reading connections close now
  t.workers.stop();   // the running handlers end (they see the server stopping) and write their last bytes
  t.stop_sessions();  // what finished in the meantime
  t.work.reset();     // the io threads return once every connection is closed
  for (auto& th : t.io_threads) th.join();
  t.io_threads.clear();
}

size_t Transport::open_connections() const {
  std::lock_guard lock(impl_->mu);
  return impl_->sessions.size();
}

}  // namespace keel::server::http
