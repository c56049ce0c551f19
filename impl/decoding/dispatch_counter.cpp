#include "impl/decoding/dispatch_counter.h"

#include <array>
#include <memory>
#include <string_view>

#include <ATen/ATen.h>
#include <ATen/record_function.h>

namespace specgate {
namespace {

thread_local DispatchCounter* innermost = nullptr;
// Operators open on this thread, and those among them that synchronise.
thread_local int64_t open_operators = 0;
thread_local int64_t open_syncs = 0;

constexpr std::array<std::string_view, 6> kSizeOrScalarReads = {
    "aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select", "aten::_unique2", "aten::unique_consecutive",
    "aten::equal"};

// _to_copy(self, dtype, layout, device, ...): to the host from a device, or on a host a copy
// that changes neither device nor dtype, which only download() asks for.
bool is_download(const at::RecordFunction& fn) {
  const auto inputs = fn.inputs();
  if (inputs.size() < 4 || !inputs[0].isTensor()) return false;
  const at::Tensor& self = inputs[0].toTensor();
  const c10::Device to = inputs[3].isDevice() ? inputs[3].toDevice() : self.device();
  if (!to.is_cpu()) return false;
  if (!self.is_cpu()) return true;
  return inputs[1].isNone() || inputs[1].toScalarType() == self.scalar_type();
}

// copy_(self, src): into host memory from a device.
bool copies_to_host(const at::RecordFunction& fn) {
  const auto inputs = fn.inputs();
  return inputs.size() >= 2 && inputs[0].isTensor() && inputs[1].isTensor() && inputs[0].toTensor().is_cpu() &&
         !inputs[1].toTensor().is_cpu();
}

bool synchronises(const at::RecordFunction& fn) {
  const std::string_view name = fn.name();
  for (std::string_view read : kSizeOrScalarReads) {
    if (name == read) return true;
  }
  if (name == "aten::_to_copy") return is_download(fn);
  if (name == "aten::copy_") return copies_to_host(fn);
  return false;
}

}  // namespace

// Counts the operators the code itself dispatches, not those an operator's CPU implementation
// dispatches inside it (a batched matmul runs one per matrix there, one kernel on a GPU), and
// a synchronisation once, however many of its inner operators would count too.
struct DispatchObserver {
  struct Sync final : at::ObserverContext {};

  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    const bool outermost = open_operators++ == 0;
    const bool sync = open_syncs == 0 && synchronises(fn);
    for (DispatchCounter* counter = innermost; counter != nullptr; counter = counter->outer_) {
      counter->counts_.operators += outermost ? 1 : 0;
      counter->counts_.host_syncs += sync ? 1 : 0;
    }
    if (!sync) return nullptr;
    ++open_syncs;
    return std::make_unique<Sync>();
  }

  static void on_end(const at::RecordFunction&, at::ObserverContext* sync) {
    --open_operators;
    if (sync != nullptr) --open_syncs;
  }
};

DispatchCounter::DispatchCounter() : outer_(innermost) {
  if (outer_ == nullptr) {
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&DispatchObserver::on_start, &DispatchObserver::on_end)
                                             .needsInputs(true)
                                             .scopes({at::RecordScope::FUNCTION}));
  }
  innermost = this;
}

DispatchCounter::~DispatchCounter() {
  innermost = outer_;
  if (outer_ == nullptr) at::removeCallback(handle_);
}

}  // namespace specgate
