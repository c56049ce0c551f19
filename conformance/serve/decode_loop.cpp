#include "conformance/serve/decode_loop.h"

#include <algorithm>
#include <exception>

namespace specgate::cli {

DecodeLoop::DecodeLoop(std::function<std::unique_ptr<ServeEngine>()> make_engine, int64_t capacity)
    : make_engine_(std::move(make_engine)), engine_(make_engine_()), capacity_(capacity), thread_([this] { run(); }) {}

DecodeLoop::~DecodeLoop() {
  {
    const std::lock_guard lock(mutex_);
    closing_ = stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

bool DecodeLoop::submit(ServeRequest request, OnFinished on_finished) {
  {
    const std::lock_guard lock(mutex_);
    if (closing_ || static_cast<int64_t>(unfinished_.size()) >= capacity_) return false;
    const int64_t id = next_id_++;
    unfinished_.emplace(id, std::move(on_finished));
    arrived_.emplace_back(id, std::move(request));
  }
  changed_.notify_all();
  return true;
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
      changed_.wait(lock, [this] { return stopping_ || !arrived_.empty() || engine_->has_work(); });
      if (stopping_ && unfinished_.empty()) return;
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
    std::vector<std::pair<OnFinished, Outcome>> outcomes;
    {
      const std::lock_guard lock(mutex_);
      if (failure) {
        // The engine's state is unknown after a failure: the requests it holds get the error,
        // and those that arrived meanwhile go to a fresh engine.
        for (auto it = unfinished_.begin(); it != unfinished_.end();) {
          const int64_t id = it->first;
          if (std::any_of(arrived_.begin(), arrived_.end(), [id](const auto& request) { return request.first == id; })) {
            ++it;
            continue;
          }
          outcomes.emplace_back(std::move(it->second), failure);
          it = unfinished_.erase(it);
        }
        engine_ = make_engine_();
      }
      for (auto& [id, generated] : finished) {
        const auto it = unfinished_.find(id);
        outcomes.emplace_back(std::move(it->second), std::move(generated));
        unfinished_.erase(it);
      }
    }
    for (auto& [on_finished, outcome] : outcomes) on_finished(std::move(outcome));
    changed_.notify_all();
  }
}

}  // namespace specgate::cli
