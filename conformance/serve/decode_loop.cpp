#include "conformance/serve/decode_loop.h"

#include <exception>

namespace specgate::cli {

DecodeLoop::DecodeLoop(std::unique_ptr<ServeEngine> engine, int64_t capacity)
    : engine_(std::move(engine)), capacity_(capacity), thread_([this] { run(); }) {}

DecodeLoop::~DecodeLoop() {
  {
    const std::lock_guard lock(mutex_);
    closing_ = stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

std::optional<std::future<Generated>> DecodeLoop::submit(ServeRequest request) {
  std::future<Generated> future;
  {
    const std::lock_guard lock(mutex_);
    if (closing_ || static_cast<int64_t>(unfinished_.size()) >= capacity_) return std::nullopt;
    const int64_t id = next_id_++;
    future = unfinished_[id].get_future();
    arrived_.emplace_back(id, std::move(request));
  }
  changed_.notify_all();
  return future;
}

void DecodeLoop::close() {
  {
    const std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
}

bool DecodeLoop::closing() const {
  const std::lock_guard lock(mutex_);
  return closing_;
}

void DecodeLoop::drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return closing_ && unfinished_.empty(); });
}

void DecodeLoop::run() {
  while (true) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || (!failed_ && (!arrived_.empty() || engine_->has_work())); });
      if (stopping_ && (failed_ || unfinished_.empty())) return;
      for (auto& [id, request] : arrived_) engine_->admit(id, std::move(request));
      arrived_.clear();
    }
    std::vector<std::pair<int64_t, Generated>> finished;
    std::exception_ptr failure;
    try {
      finished = engine_->step();
    } catch (...) {
      failure = std::current_exception();
    }
    {
      const std::lock_guard lock(mutex_);
      if (failure) {
        // The engine's state is unknown after a failure: every admitted request gets the error,
        // and the loop takes no more.
        for (auto& [id, promise] : unfinished_) promise.set_exception(failure);
        unfinished_.clear();
        arrived_.clear();
        failed_ = closing_ = true;
      }
      for (auto& [id, generated] : finished) {
        unfinished_.at(id).set_value(std::move(generated));
        unfinished_.erase(id);
      }
    }
    changed_.notify_all();
  }
}

}  // namespace specgate::cli
