#include "conformance/serve/completion_server.h"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "conformance/serve/completion_stream.h"
#include "conformance/serve/decoded_counters.h"
#include "conformance/serve/read_progress.h"
#include "impl/common/error.h"

namespace specgate::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;
using Reply = std::function<void(Response)>;

// How a route answers its request: with one response, or with a stream of server-sent events,
// the headers before the first; `last` ends it.
struct Responder {
  Reply whole;
  std::function<void(std::string events, bool last)> events;
};

std::string joined(const std::vector<std::string>& events) {
  std::string out;
  for (const std::string& event : events) out += event;
  return out;
}

Response json_response(http::status status, std::string body) {
  Response response{status, 11};
  response.set(http::field::content_type, "application/json");
  response.body() = std::move(body);
  return response;
}

Response error_reply(http::status status, const std::string& message) {
  Response response = json_response(status, error_response(static_cast<int>(status), message));
  if (status == http::status::service_unavailable) response.set(http::field::retry_after, "1");
  return response;
}

// libtorch's messages carry a backtrace after their first line.
std::string first_line(std::string_view message) { return std::string(message.substr(0, message.find('\n'))); }

// Events of a streamed answer that a client may leave unread before it counts as gone: far more
// than a round's, far less than memory.
constexpr size_t kMaxUnsentEventBytes = size_t{4} << 20;

// Drops the work of a request whose client has gone; empty for a request answered at once.
using Cancel = std::function<void()>;

// The routes, and what every connection shares.
class Routes {
 public:
  Routes(DecodeLoop& loop, const ServeReporter& reporter, asio::thread_pool& reporting, const Tokenizer& tokenizer,
         const ServeLimits& limits)
      : loop_(loop), reporter_(reporter), reporting_(reporting), tokenizer_(tokenizer), limits_(limits) {}

  // Answers `request` through `responder`: at once, or as it decodes, or once decoded and reported.
  Cancel route(const Request& request, const Responder& responder) {
    const Reply& reply = responder.whole;
    const std::string_view target(request.target().data(), request.target().size());
    const std::string path(target.substr(0, target.find('?')));
    const bool generates = path == "/v1/completions" || path == "/v1/chat/completions";
    const http::verb wanted = generates ? http::verb::post : http::verb::get;
    const auto at_once = [&](Response response) {
      reply(std::move(response));
      return Cancel();
    };
    if (!generates && path != "/health" && path != "/v1/models" && path != "/metrics")
      return at_once(error_reply(http::status::not_found, "no route " + path));
    const bool head_of_get = wanted == http::verb::get && request.method() == http::verb::head;
    if (request.method() != wanted && !head_of_get)
      return at_once(error_reply(http::status::method_not_allowed, path + " takes " + std::string(http::to_string(wanted))));
    if (generates) return complete(path == "/v1/chat/completions" ? ServeApi::kChat : ServeApi::kCompletions,
                                   request.body(), responder);
    if (path == "/health") {
      if (loop_.closing()) return at_once(error_reply(http::status::service_unavailable, "the server is shutting down"));
      return at_once(Response{http::status::ok, 11});
    }
    if (path == "/metrics") {
      Response metrics{http::status::ok, 11};
      metrics.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      metrics.body() = counters_.prometheus_text(limits_.model);
      return at_once(std::move(metrics));
    }
    return at_once(json_response(http::status::ok, models_card()));
  }

 private:
  // One request's choices on their way, each decoded as a request of its own. Touched on the
  // decode loop's thread only, and by the reporting pool once every choice finished.
  struct Answer {
    ServeRequest request;
    Responder responder;
    int64_t id = 0;
    std::optional<CompletionStream> stream;
    std::vector<std::optional<SequenceResult>> finished;  // whole answers: each choice once decoded
    int64_t unfinished = 0;
    bool failed = false;
    std::vector<int64_t> loop_ids;
  };

  Cancel complete(ServeApi api, const std::string& body, const Responder& responder) {
    auto answer = std::make_shared<Answer>();
    try {
      answer->request = api == ServeApi::kChat ? parse_chat_request(body, tokenizer_, limits_)
                                               : parse_completion_request(body, tokenizer_, limits_);
    } catch (const RequestRefused& refused) {
      responder.whole(error_reply(http::int_to_status(static_cast<unsigned>(refused.status())), refused.what()));
      return {};
    } catch (const std::exception& e) {
      responder.whole(error_reply(http::status::bad_request, "the prompt cannot be encoded: " + first_line(e.what())));
      return {};
    }
    const ServeRequest& request = answer->request;
    if (request.n > loop_.capacity()) {
      responder.whole(error_reply(http::status::bad_request, "field 'n': " + std::to_string(request.n) +
                                                                 " choices, more than the " + std::to_string(loop_.capacity()) +
                                                                 " requests this server decodes at once (--max-queue)"));
      return {};
    }
    answer->responder = responder;
    answer->id = next_id_++;
    answer->unfinished = request.n;
    answer->finished.resize(static_cast<size_t>(request.n));
    if (request.stream) answer->stream.emplace(request, tokenizer_, limits_.model, answer->id, reporter_.faults());
    std::vector<DecodeLoop::Submission> choices;
    for (int64_t index = 0; index < request.n; ++index) {
      ServeRequest choice = request;
      choice.seed = choice_seed(request.seed, index);
      DecodeLoop::OnTokens on_tokens;
      if (request.stream) on_tokens = [answer, index](std::span<const int64_t> generated) { advance(*answer, index, generated); };
      choices.push_back({std::move(choice), [this, answer, index](Outcome outcome) { finish(answer, index, std::move(outcome)); },
                         std::move(on_tokens)});
    }
    const std::optional<std::vector<int64_t>> admitted = loop_.submit(std::move(choices));
    if (!admitted) {
      responder.whole(error_reply(http::status::service_unavailable,
                                  loop_.closing() ? "the server is shutting down" : "the request queue is full"));
      return {};
    }
    answer->loop_ids = *admitted;
    return [this, ids = *admitted] {
      for (const int64_t id : ids) loop_.cancel(id);
    };
  }

  static void advance(Answer& answer, int64_t index, std::span<const int64_t> generated) {
    if (answer.failed) return;
    const std::vector<std::string> events = answer.stream->advance(index, generated);
    if (!events.empty()) answer.responder.events(joined(events), false);
  }

  void finish(const std::shared_ptr<Answer>& answer, int64_t index, Outcome outcome) {
    if (answer->failed) return;
    try {
      if (auto* failure = std::get_if<std::exception_ptr>(&outcome)) std::rethrow_exception(*failure);
      SequenceResult& sequence = std::get<SequenceResult>(outcome);
      --answer->unfinished;
      counters_.count(answer->request, sequence, answer->unfinished == 0);
      if (answer->stream) {
        const Generated generated = reporter_.report(answer->request, std::move(sequence));
        answer->responder.events(joined(answer->stream->finish(index, generated)), answer->unfinished == 0);
        return;
      }
      answer->finished[static_cast<size_t>(index)] = std::move(sequence);
      if (answer->unfinished > 0) return;
    } catch (...) {
      fail(*answer, std::current_exception());
      return;
    }
    // A target pass over prompt and tokens runs beside decoding, not on its thread.
    if (ServeReporter::needs_pass(answer->request)) return asio::post(reporting_, [this, answer] { reply_whole(*answer); });
    reply_whole(*answer);
  }

  void reply_whole(Answer& answer) const {
    try {
      std::vector<Generated> choices;
      for (std::optional<SequenceResult>& sequence : answer.finished) choices.push_back(reporter_.report(answer.request, std::move(*sequence)));
      answer.responder.whole(json_response(http::status::ok, response_body(answer.request, choices, tokenizer_, limits_.model, answer.id)));
    } catch (...) {
      fail(answer, std::current_exception());
    }
  }

  // The request fails as a whole: its other choices leave the decoder.
  void fail(Answer& answer, const std::exception_ptr& failure) const {
    answer.failed = true;
    for (const int64_t id : answer.loop_ids) loop_.cancel(id);
    const std::string message = failure_message(answer.id, failure);
    if (answer.stream) {
      answer.responder.events(joined(answer.stream->fail(500, message)), true);
    } else {
      answer.responder.whole(error_reply(http::status::internal_server_error, message));
    }
  }

  // What a failed request is answered, logged with its id.
  static std::string failure_message(int64_t id, const std::exception_ptr& failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "serve: request %lld failed: %s\n", static_cast<long long>(id), e.what());
      return "decoding failed: " + first_line(e.what());
    } catch (...) {
      std::fprintf(stderr, "serve: request %lld failed\n", static_cast<long long>(id));
      return "decoding failed";
    }
  }

  std::string models_card() const {
    const auto created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
    const nlohmann::json card = {{"id", limits_.model}, {"object", "model"}, {"created", created.count()},
                                 {"owned_by", "specgate"}, {"max_model_len", limits_.context}};
    return nlohmann::json{{"object", "list"}, {"data", {card}}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

  DecodeLoop& loop_;
  DecodedCounters counters_;
  const ServeReporter& reporter_;
  asio::thread_pool& reporting_;
  const Tokenizer& tokenizer_;
  const ServeLimits& limits_;
  std::atomic<int64_t> next_id_{0};
};

// Counts what the server must wait for before it stops.
struct Tally {
  std::atomic<int64_t> connections{0};
  std::atomic<int64_t> unanswered{0};  // requests routed whose response is not yet written
};

// One client's connection: reads a request within the request timeout, routes it, writes the
// answer, and reads the next while the client keeps it alive.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, Routes& routes, const ConnectionLimits& limits, Tally& tally)
      : stream_(std::move(socket)), routes_(routes), limits_(limits), tally_(tally) {
    ++tally_.connections;
  }
  ~Connection() { --tally_.connections; }

  void start() { read(); }

  // Closes the connection if it still waits for a request's header, the longest of those that do
  // (ConnectionRegistry): the server is at its limit, and a working client's connection comes first.
  bool shed(std::chrono::steady_clock::rep waiting_since) {
    if (!idle_since_.compare_exchange_strong(waiting_since, 0)) return false;
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
      self->stream_.socket().close(ignored);
    });
    return true;
  }

  // Since when it has waited for a request's header (steady clock ticks); 0 while it does not.
  std::chrono::steady_clock::rep idle_since() const { return idle_since_.load(); }

  // Answers 503 without reading a request: the server is at its connection limit.
  void refuse() {
    close_after_write_ = linger_ = true;
    write(error_reply(http::status::service_unavailable,
                      "the server has " + std::to_string(limits_.max_connections) + " connections open (--max-connections)"));
  }

 private:
  std::chrono::steady_clock::duration timeout() const {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(limits_.request_timeout_seconds));
  }

  void read() {
    head_ = false;
    parser_.emplace();
    bound(*parser_, limits_);
    stream_.expires_after(timeout());
    idle_since_ = std::chrono::steady_clock::now().time_since_epoch().count();
    http::async_read_header(stream_, buffer_, *parser_, beast::bind_front_handler(&Connection::on_header, shared_from_this()));
  }

  // Read apart from the body: Beast 1.74 checks body_limit against Content-Length reliably only
  // then. A client that sent "Expect: 100-continue" (curl, for bodies over 1 KiB) waits for the
  // interim answer before it sends the body.
  void on_header(beast::error_code error, size_t bytes) {
    // read() left a time there: 0 means shed() claimed the connection first, and closes it.
    if (idle_since_.exchange(0) == 0) return;
    if (error) return on_read(error, bytes);
    if (const std::optional<Refusal> refusal = refusal_after_header(*parser_)) return answer_and_close(*refusal);
    if (expects_continue(*parser_)) {
      auto proceed = std::make_shared<http::response<http::empty_body>>(http::status::continue_, parser_->get().version());
      http::async_write(stream_, *proceed, [self = shared_from_this(), proceed](beast::error_code failed, size_t) {
        if (failed) return self->on_read(failed, 0);
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Connection::on_read, shared_from_this()));
  }

  void on_read(beast::error_code error, size_t) {
    if (error) {
      if (const std::optional<Refusal> refusal = refusal_after_error(error, limits_)) return answer_and_close(*refusal);
      stream_.socket().close(error);
      return;
    }

    const Request& request = parser_->get();
    close_after_write_ = !request.keep_alive();
    version_ = request.version();
    head_ = request.method() == http::verb::head;
    stream_.expires_never();  // decoding takes what it takes
    ++tally_.unanswered;
    answering_ = true;
    ++requests_;
    const Responder responder{
        [self = shared_from_this()](Response response) {
          asio::post(self->stream_.get_executor(),
                     [self, response = std::move(response)]() mutable { self->write(std::move(response)); });
        },
        [self = shared_from_this(), request = requests_](std::string events, bool last) {
          asio::post(self->stream_.get_executor(), [self, events = std::move(events), last, request]() mutable {
            self->send_events(std::move(events), last, request);
          });
        }};
    cancel_ = routes_.route(request, responder);
    if (cancel_) watch_client();
  }

  // Queues the events of a streamed answer to request number `request` on this connection, the
  // headers first; `last` ends the answer. A client that reads none of them for the request
  // timeout (watch_reading()), whose writes stall that long, or that lets more than
  // kMaxUnsentEventBytes pile up, has gone: its request is dropped.
  void send_events(std::string events, bool last, int64_t request) {
    if (!answering_ || requests_ != request) return;
    unsent_bytes_ += events.size();
    if (unsent_bytes_ > kMaxUnsentEventBytes) return abandon();
    unsent_.push_back(std::move(events));
    stream_ends_ = stream_ends_ || last;
    pump_events();
  }

  void pump_events() {
    if (pumping_) return;
    const bool chunked = version_ >= 11;  // HTTP/1.0: the body runs to the connection's close
    const auto then = [self = shared_from_this()](beast::error_code error, size_t bytes) {
      self->pumping_ = false;
      if (error) return self->abandon();
      self->read_progress_.handed(bytes);
      self->pump_events();
    };
    if (!stream_head_) {
      stream_head_.emplace(http::status::ok, version_);
      stream_head_->set(http::field::content_type, "text/event-stream");
      stream_head_->set(http::field::cache_control, "no-cache");
      close_after_write_ = close_after_write_ || !chunked;
      stream_head_->keep_alive(!close_after_write_);
      stream_head_->chunked(chunked);
      stream_serializer_.emplace(*stream_head_);
      read_progress_ = {};
      last_read_ = std::chrono::steady_clock::now();
      watch_reading(requests_);
      pumping_ = true;
      stream_.expires_after(timeout());
      return http::async_write_header(stream_, *stream_serializer_, then);
    }
    if (!unsent_.empty()) {
      writing_ = std::move(unsent_.front());
      unsent_.pop_front();
      unsent_bytes_ -= writing_.size();
      pumping_ = true;
      stream_.expires_after(timeout());
      if (chunked) return asio::async_write(stream_, http::make_chunk(asio::buffer(writing_)), then);
      return asio::async_write(stream_, asio::buffer(writing_), then);
    }
    if (!stream_ends_) return;
    const auto ended = [self = shared_from_this()](beast::error_code error, size_t) {
      self->stream_head_.reset();
      self->stream_serializer_.reset();
      self->stream_ends_ = false;
      self->on_write(error, 0);
    };
    pumping_ = true;
    stream_.expires_after(timeout());
    if (chunked) return asio::async_write(stream_, http::make_chunk_last(), ended);
    ended({}, 0);
  }

  // While its stream is written, a client that acknowledges none of it for the request timeout
  // has stopped reading, whatever the socket's buffers still take: its request is dropped. Looked
  // at four times a timeout.
  void watch_reading(int64_t request) {
    reading_watch_.expires_after(timeout() / 4);
    reading_watch_.async_wait([self = shared_from_this(), request](beast::error_code error) {
      if (error || !self->answering_ || self->requests_ != request || !self->stream_head_) return;
      const auto now = std::chrono::steady_clock::now();
      if (self->read_progress_.advanced(self->stream_.socket().native_handle())) self->last_read_ = now;
      if (now - self->last_read_ >= self->timeout()) return self->abandon();
      self->watch_reading(request);
    });
  }

  // While its request decodes, a client that closes the connection cancels it: the socket turns
  // readable and a peek finds the end of the stream, or a reset. Data instead (the client's next
  // request, sent early) ends the watch: that client is still there.
  void watch_client() {
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), request = requests_](beast::error_code error) {
      if (error || !self->answering_ || self->requests_ != request) return;
      char byte;
      const ssize_t peeked = ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (peeked > 0) return;
      if (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return self->watch_client();
      self->abandon();
    });
  }

  // The client has gone: its request leaves the decoder, and nothing more is written.
  void abandon() {
    if (!answering_) return;
    answering_ = false;
    --tally_.unanswered;
    std::exchange(cancel_, {})();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  // Refuses a request whose body may still be on its way.
  void answer_and_close(const Refusal& refusal) {
    close_after_write_ = linger_ = true;
    write(error_reply(refusal.status, refusal.message));
  }

  void write(Response response) {
    response_.emplace(std::move(response));
    response_->version(version_);
    response_->keep_alive(!close_after_write_);
    response_->prepare_payload();
    if (head_) {  // the headers a GET would get, without its body
      const size_t length = response_->body().size();
      response_->body().clear();
      response_->content_length(length);
    }
    stream_.expires_after(timeout());
    http::async_write(stream_, *response_, beast::bind_front_handler(&Connection::on_write, shared_from_this()));
  }

  void on_write(beast::error_code error, size_t) {
    pumping_ = false;
    cancel_ = {};
    if (answering_) {
      answering_ = false;
      --tally_.unanswered;
    }
    if (error) {
      stream_.socket().shutdown(tcp::socket::shutdown_send, error);
      return;
    }
    if (close_after_write_ && linger_) return linger();
    if (close_after_write_) {
      stream_.socket().shutdown(tcp::socket::shutdown_send, error);
      return;
    }
    read();
  }

  // After refusing a request, what the client still sends is read and dropped for up to 2 s before
  // the socket closes: closed with unread data, it would reset the connection, and a client
  // still sending a body too large would lose the answer that says so.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(2));
    drain();
  }

  void drain() {
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(64 * 1024), [self = shared_from_this()](beast::error_code error, size_t) {
      if (!error) self->drain();
    });
  }

  beast::tcp_stream stream_;
  asio::steady_timer reading_watch_{stream_.get_executor()};
  Routes& routes_;
  const ConnectionLimits& limits_;
  Tally& tally_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  std::optional<Response> response_;
  unsigned version_ = 11;
  bool head_ = false;  // the request being answered is a HEAD
  bool close_after_write_ = false;
  bool linger_ = false;  // drain what the client still sends before closing
  std::atomic<std::chrono::steady_clock::rep> idle_since_{0};
  bool answering_ = false;
  int64_t requests_ = 0;  // routed on this connection
  Cancel cancel_;         // the request being answered, while it decodes
  // A streamed answer under way: its headers, events not yet written, the chunk being written.
  std::optional<http::response<http::empty_body>> stream_head_;
  std::optional<http::response_serializer<http::empty_body>> stream_serializer_;
  std::deque<std::string> unsent_;
  size_t unsent_bytes_ = 0;
  std::string writing_;
  bool pumping_ = false;      // a write of the stream is under way
  bool stream_ends_ = false;  // its last events are queued
  ReadProgress read_progress_;  // of the stream under way
  std::chrono::steady_clock::time_point last_read_;  // when its client last acknowledged any of it
};

// The connections open, to shed the one that has waited longest for a request when a new one
// finds the server at its limit: idle and slow sockets cannot lock working clients out.
class ConnectionRegistry {
 public:
  void add(const std::shared_ptr<Connection>& connection) {
    const std::lock_guard lock(mutex_);
    std::erase_if(connections_, [](const std::weak_ptr<Connection>& c) { return c.expired(); });
    connections_.push_back(connection);
  }

  // False when every open connection has a request under way.
  bool shed_longest_idle() {
    const std::lock_guard lock(mutex_);
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::shared_ptr<Connection> oldest;
      std::chrono::steady_clock::rep since = 0;
      for (const std::weak_ptr<Connection>& c : connections_) {
        const std::shared_ptr<Connection> open = c.lock();
        const auto waiting = open ? open->idle_since() : 0;
        if (waiting != 0 && (!oldest || waiting < since)) oldest = open, since = waiting;
      }
      if (!oldest) return false;
      if (oldest->shed(since)) return true;  // else it got its header meanwhile
    }
    return false;
  }

 private:
  std::mutex mutex_;
  std::vector<std::weak_ptr<Connection>> connections_;
};

tcp::endpoint resolve(asio::io_context& io, const ServerAddress& address) {
  beast::error_code error;
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(address.host, std::to_string(address.port), tcp::resolver::passive, error);
  if (error || results.empty()) throw InputError("--host: cannot resolve '" + address.host + "': " + error.message());
  return results.begin()->endpoint();
}

}  // namespace

void serve_completions(DecodeLoop& loop, const ServeReporter& reporter, const Tokenizer& tokenizer, const ServeLimits& limits,
                       const ServerAddress& address, const ConnectionLimits& connections, const std::atomic<bool>& stop,
                       const std::function<void(int)>& on_listening) {
  asio::thread_pool reporting(static_cast<size_t>(connections.report_threads));
  Routes routes(loop, reporter, reporting, tokenizer, limits);
  Tally tally;
  ConnectionRegistry registry;
  asio::io_context io(static_cast<int>(connections.io_threads));
  tcp::acceptor acceptor(asio::make_strand(io));  // accepts and the final close never run at once
  const tcp::endpoint endpoint = resolve(io, address);
  beast::error_code error;
  acceptor.open(endpoint.protocol(), error);
  // For a fixed port only: a restart need not wait out the last run's connections. With port 0,
  // Linux may hand a reused address a port another socket holds.
  if (!error && address.port != 0) acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor.bind(endpoint, error);
  if (!error) acceptor.listen(static_cast<int>(connections.backlog), error);
  if (error)
    throw InputError("--host/--port: cannot listen on " + address.host + ":" + std::to_string(address.port) + ": " +
                     error.message());

  std::function<void()> accept = [&] {
    acceptor.async_accept(asio::make_strand(io), [&](beast::error_code failed, tcp::socket socket) {
      if (!acceptor.is_open()) return;
      if (!failed) {
        auto connection = std::make_shared<Connection>(std::move(socket), routes, connections, tally);
        if (tally.connections.load() > connections.max_connections && !registry.shed_longest_idle()) {
          connection->refuse();
        } else {
          registry.add(connection);
          connection->start();
        }
      }
      accept();
    });
  };
  accept();
  std::vector<std::thread> threads;
  for (int64_t i = 0; i < connections.io_threads; ++i) threads.emplace_back([&io] { io.run(); });
  on_listening(acceptor.local_endpoint().port());

  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  loop.close();
  loop.drain();
  reporting.join();
  // No new connections from here; the answers of the last requests are on their way out, each
  // write with its deadline.
  asio::post(acceptor.get_executor(), [&acceptor] { acceptor.close(); });
  while (tally.unanswered.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  io.stop();
  for (std::thread& thread : threads) thread.join();
}

}  // namespace specgate::cli
