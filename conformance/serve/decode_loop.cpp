#include "conformance/serve/decode_loop.h"

#include <algorithm>
#include <exception>
#include <future>
#include <stdexcept>
#include <string>

namespace specgate::cli {

DecodeLoop::DecodeLoop(std::function<std::unique_ptr<ServeEngine>()> make_engine, int64_t capacity)
    : make_engine_(std::move(make_engine)), capacity_(capacity) {
  std::promise<void> made;
  std::future<void> engine_made = made.get_future();
  thread_ = std::thread([this, &made] {
    try {
      engine_ = make_engine_();
    } catch (...) {
      made.set_exception(std::current_exception());
      return;
    }
    made.set_value();
    run();
  });
  try {
    engine_made.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

DecodeLoop::~DecodeLoop() {
  {
    const std::lock_guard lock(mutex_);
    closing_ = stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

std::optional<std::vector<int64_t>> DecodeLoop::submit(std::vector<Submission> group) {
  std::vector<int64_t> ids;
  {
    const std::lock_guard lock(mutex_);
    if (closing_ || static_cast<int64_t>(unfinished_.size() + group.size()) > capacity_) return std::nullopt;
    const int64_t first = next_id_;
    for (Submission& submission : group) {
      const int64_t id = next_id_++;
      unfinished_.emplace(id, Callbacks{std::move(submission.on_finished), std::move(submission.on_tokens)});
      arrived_.push_back({id, first, std::move(submission.request)});
      ids.push_back(id);
    }
  }
  changed_.notify_all();
  return ids;
}

std::optional<int64_t> DecodeLoop::submit(ServeRequest request, OnFinished on_finished) {
  std::vector<Submission> one;
  one.push_back({std::move(request), std::move(on_finished), {}});
  const std::optional<std::vector<int64_t>> ids = submit(std::move(one));
  if (!ids) return std::nullopt;
  return ids->front();
}

void DecodeLoop::cancel(int64_t id) {
  {
    const std::lock_guard lock(mutex_);
    if (unfinished_.erase(id) == 0) return;  // finished already
    const size_t waiting = arrived_.size();
    std::erase_if(arrived_, [id](const Arrival& arrival) { return arrival.id == id; });
    if (arrived_.size() == waiting) cancelled_.push_back(id);
  }
  changed_.notify_all();
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
      for (int64_t id : cancelled_) engine_->cancel(id);
      cancelled_.clear();
      for (Arrival& arrival : arrived_) engine_->admit(arrival.id, arrival.group, std::move(arrival.request));
      arrived_.clear();
    }
    std::vector<SequenceResult> finished;
    std::exception_ptr failure;
    try {
      finished = engine_->step();
    } catch (...) {
      failure = std::current_exception();
    }
    std::vector<std::pair<OnFinished, Outcome>> outcomes;
    std::map<int64_t, OnTokens> following;  // unfinished requests that read their tokens as they come
    {
      const std::lock_guard lock(mutex_);
      for (SequenceResult& result : finished) {
        const int64_t id = result.sequence_index;
        const auto it = unfinished_.find(id);
        if (it != unfinished_.end()) {
          outcomes.emplace_back(std::move(it->second.on_finished), std::move(result));
          unfinished_.erase(it);
        } else if (std::find(cancelled_.begin(), cancelled_.end(), id) == cancelled_.end() && !failure) {
          // Neither waiting for it nor cancelled during the step: the engine is broken.
          failure = std::make_exception_ptr(std::logic_error(
              "the decoder returned request " + std::to_string(id) + " twice, or one it was never given"));
        }
      }
      if (failure) {
        // The engine's state is unknown after a failure: the requests it holds get the error,
        // and those that arrived meanwhile go to a fresh engine.
        for (auto it = unfinished_.begin(); it != unfinished_.end();) {
          const int64_t id = it->first;
          if (std::any_of(arrived_.begin(), arrived_.end(), [id](const Arrival& arrival) { return arrival.id == id; })) {
            ++it;
            continue;
          }
          outcomes.emplace_back(std::move(it->second.on_finished), failure);
          it = unfinished_.erase(it);
        }
        cancelled_.clear();
        engine_ = make_engine_();
      }
      for (const auto& [id, callbacks] : unfinished_) {
        if (callbacks.on_tokens) following.emplace(id, callbacks.on_tokens);
      }
    }
    for (auto& [on_finished, outcome] : outcomes) on_finished(std::move(outcome));
    // Only this thread steps the engine: what it generated holds still while read.
    if (!following.empty()) {
      engine_->visit_live([&following](int64_t id, std::span<const int64_t> generated) {
        if (const auto it = following.find(id); it != following.end()) it->second(generated);
      });
    }
    changed_.notify_all();
  }
}

}  // namespace specgate::cli
