// Where one decode step and one verification pass of a checkpoint spend their time, against the
// machine's limit: a step reads every weight once, so no step can beat weight bytes / read
// bandwidth. Per dtype, interleaved repeats of: this thread's read bandwidth over a buffer the
// size of the weights, in huge pages as the weights are (a sum, as STREAM reads), and its copy
// bandwidth (read and write counted, as STREAM counts), a pass of 1 new position and a pass of
// K+1 positions over a cache of --context tokens; then each pass operator by operator
// (libtorch's profiler, self time, calls per pass). With --batch B every pass has B rows, and
// may be bound by arithmetic rather than by reading: on the CPU this thread's multiply-add rate
// is measured too (a product of 256 rows by a weight of the model's shape, in cache), and each
// pass's floating-point operations over it are a second limit. One thread, as `conformance`
// computes. On CUDA each operator's self time is the host's time to launch it, and the kernels
// it launched are totalled apart, so that a pass's time shows whether the host or the device
// bounds it, and decoding is timed with cuDNN's attention allowed and not. Writes JSON to
// standard output.
//
//   decode_anatomy CHECKPOINT [--batch 1] [--context 200] [--positions 5] [--repeats 15]
//                  [--dtypes float32,bfloat16] [--device cpu]
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "impl/checkpoint/model_io.h"
#include "impl/common/cpu_configuration.h"
#include "impl/common/device.h"
#include "impl/common/dtype.h"
#include "impl/common/huge_page_arena.h"
#include "impl/model/kv_cache.h"
#include "impl/model/transformer.h"
#include "impl/model/weights.h"

namespace specgate::benchmarks {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Waits for the work queued on `t`'s device (reading one element back does, on CUDA's stream).
void finish(const at::Tensor& t) { t.reshape(-1)[0].item(); }

// Median and the 10th and 90th percentiles.
json summary(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto at = [&](double q) { return values[static_cast<size_t>(q * static_cast<double>(values.size() - 1) + 0.5)]; };
  return {{"median", at(0.5)}, {"p10", at(0.1)}, {"p90", at(0.9)}, {"n", values.size()}};
}

int64_t weight_bytes(const Transformer& model) {
  ModelWeights weights = model.weights();
  int64_t bytes = 0;
  for (const WeightSlot& slot : weight_slots(model.config(), weights)) bytes += static_cast<int64_t>(slot.tensor->nbytes());
  return bytes;
}

// Floating-point operations of one row through the model's matrix products and its attention
// over `keys` keys (a multiply-add counted as two).
double row_flops(const Transformer& model, int64_t keys) {
  const ModelConfig& config = model.config();
  const ModelWeights weights = model.weights();
  double products = static_cast<double>(weights.lm_head.numel());
  for (const LayerWeights& layer : weights.layers) {
    for (const at::Tensor* w : {&layer.q_proj, &layer.k_proj, &layer.v_proj, &layer.o_proj, &layer.gate_proj,
                                &layer.up_proj, &layer.down_proj})
      products += static_cast<double>(w->numel());
  }
  const double attention = 2.0 * static_cast<double>(config.num_layers * config.num_heads * config.head_dim * keys);
  return 2.0 * (products + attention);
}

// This thread's multiply-add rate, GFLOP/s: a product of 256 rows by a weight of the model's
// MLP shape, every operand resident in cache after the first.
double multiply_add_gflop_per_s(const Transformer& model) {
  const ModelConfig& config = model.config();
  constexpr int64_t kRows = 256;
  const at::Tensor x = at::randn({kRows, config.hidden_size}, model.options());
  const at::Tensor weight = at::randn({config.intermediate_size, config.hidden_size}, model.options());
  at::Tensor y = at::linear(x, weight);
  constexpr int kProducts = 20;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < kProducts; ++i) y = at::linear(x, weight);
  finish(y);
  const double flops = 2.0 * static_cast<double>(kRows * weight.numel()) * kProducts;
  return flops / seconds_since(start) / 1e9;
}

// One pass of `positions` new tokens in each of `batch` rows after `context` cached ones, the
// cache cut back each time.
class Pass {
 public:
  Pass(const Transformer& model, int64_t batch, int64_t context, int64_t positions)
      : model_(model), context_(context), cache_(model.make_cache(batch, context + positions)) {
    const auto ids = at::TensorOptions().dtype(at::kLong).device(model.options().device());
    model.forward(at::randint(250, {batch, context}, ids), at::arange(context, ids).repeat({batch, 1}),
                  at::ones({batch, context}, ids.dtype(at::kBool)), &cache_);
    tokens_ = at::randint(250, {batch, positions}, ids);
    positions_ = at::arange(context, context + positions, ids).repeat({batch, 1});
    valid_ = at::ones({batch, context + positions}, ids.dtype(at::kBool));
  }

  void run() {
    cache_.truncate(context_);
    choices_ = model_.logits(model_.forward(tokens_, positions_, valid_, &cache_)).argmax(-1);
  }

  // Seconds a pass, over `passes` of them.
  double time(int passes) {
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < passes; ++i) run();
    finish(choices_);
    return seconds_since(start) / passes;
  }

  void finish_queued() const { finish(choices_); }

 private:
  const Transformer& model_;
  int64_t context_;
  KVCache cache_;
  at::Tensor tokens_, positions_, valid_, choices_;
};

// Milliseconds a decode step over `steps` steps after `first` cached tokens, the cache growing a
// key a step as it does in decoding, so that every step's attention meets a key count of its own.
double decode_step_ms(const Transformer& model, int64_t first, int64_t steps) {
  const auto ids = at::TensorOptions().dtype(at::kLong).device(model.options().device());
  KVCache cache = model.make_cache(1, first + steps);
  model.forward(at::randint(250, {1, first}, ids), at::arange(first, ids).unsqueeze(0),
                at::ones({1, first}, ids.dtype(at::kBool)), &cache);
  at::Tensor token = at::randint(250, {1, 1}, ids);
  finish(token);
  const Clock::time_point start = Clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    const at::Tensor position = at::full({1, 1}, first + s, ids);
    const at::Tensor valid = at::ones({1, first + s + 1}, ids.dtype(at::kBool));
    token = model.logits(model.forward(token, position, valid, &cache)).argmax(-1);
  }
  finish(token);
  return seconds_since(start) * 1e3 / static_cast<double>(steps);
}

// On CUDA, decoding as it runs, with cuDNN's attention (which builds a plan for each shape it
// meets) allowed and not, each over key counts no pass has met yet and again over the same ones;
// interleaved. The transformer itself keeps cuDNN's attention off.
json attention_backends(const Transformer& model, int64_t context, int repeats) {
  constexpr int64_t kSteps = 32;
  std::map<std::string, std::vector<double>> ms;
  int64_t first = context;
  for (int r = 0; r < repeats; ++r) {
    for (const bool cudnn : {false, true}) {
      at::globalContext().setSDPUseCuDNN(cudnn);
      const std::string backend = cudnn ? "cudnn_allowed" : "cudnn_off";
      ms[backend + "_new_shapes"].push_back(decode_step_ms(model, first, kSteps));
      ms[backend + "_seen_shapes"].push_back(decode_step_ms(model, first, kSteps));
      first += kSteps;
    }
  }
  at::globalContext().setSDPUseCuDNN(false);
  json report = {{"steps", kSteps}};
  for (const auto& [name, values] : ms) report[name + "_step_ms"] = summary(values);
  return report;
}

// The operators of `passes` passes, each by its self time (its own, less the operators it
// called) and calls, per pass, largest first; on CUDA also the kernels, by their time on the device.
json anatomy(Pass& pass, int passes, bool on_cuda) {
  using namespace torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  const ProfilerConfig config(ProfilerState::KINETO);
  std::set<ActivityType> activities = {ActivityType::CPU};
  if (on_cuda) activities.insert(ActivityType::CUDA);
  prepareProfiler(config, activities);
  enableProfiler(config, activities);
  for (int i = 0; i < passes; ++i) pass.run();
  pass.finish_queued();
  const std::unique_ptr<ProfilerResult> result = disableProfiler();

  std::vector<const KinetoEvent*> events;
  std::map<std::string, double> kernel_ns;
  double all_kernel_ns = 0;
  for (const KinetoEvent& event : result->events()) {
    if (event.deviceType() != c10::DeviceType::CPU) {
      kernel_ns[event.name()] += static_cast<double>(event.durationNs());
      all_kernel_ns += static_cast<double>(event.durationNs());
    } else if (event.durationNs() > 0 || event.name().starts_with("aten::")) {
      events.push_back(&event);
    }
  }
  std::sort(events.begin(), events.end(), [](const KinetoEvent* a, const KinetoEvent* b) {
    return a->startNs() != b->startNs() ? a->startNs() < b->startNs() : a->endNs() > b->endNs();
  });
  struct Total {
    double self_ns = 0;
    int64_t calls = 0;
  };
  std::map<std::string, Total> totals;
  std::vector<const KinetoEvent*> open;  // the enclosing operators of the event at hand
  double all_ns = 0;
  for (const KinetoEvent* event : events) {
    while (!open.empty() && open.back()->endNs() <= event->startNs()) open.pop_back();
    if (!open.empty()) totals[open.back()->name()].self_ns -= static_cast<double>(event->durationNs());
    else all_ns += static_cast<double>(event->durationNs());
    Total& total = totals[event->name()];
    total.self_ns += static_cast<double>(event->durationNs());
    ++total.calls;
    open.push_back(event);
  }
  std::vector<std::pair<std::string, Total>> ranked(totals.begin(), totals.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second.self_ns > b.second.self_ns; });
  json operators = json::array();
  int64_t calls = 0;
  for (const auto& [name, total] : ranked) {
    calls += total.calls;
    operators.push_back({{"operator", name},
                         {"self_us_per_pass", total.self_ns / 1e3 / passes},
                         {"share", total.self_ns / all_ns},
                         {"calls_per_pass", static_cast<double>(total.calls) / passes}});
  }
  json report = {{"profiled_us_per_pass", all_ns / 1e3 / passes},
                 {"operator_calls_per_pass", static_cast<double>(calls) / passes},
                 {"operators", operators}};
  if (!on_cuda) return report;
  std::vector<std::pair<std::string, double>> kernels(kernel_ns.begin(), kernel_ns.end());
  std::sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  json listed = json::array();
  for (const auto& [name, ns] : kernels)
    listed.push_back({{"kernel", name}, {"us_per_pass", ns / 1e3 / passes}, {"share", ns / all_kernel_ns}});
  report["kernel_us_per_pass"] = all_kernel_ns / 1e3 / passes;
  report["kernels"] = listed;
  return report;
}

json measure(const std::filesystem::path& checkpoint, at::ScalarType dtype, c10::Device device, int64_t batch,
             int64_t context, int64_t positions, int repeats) {
  const Transformer model = load_transformer(checkpoint, dtype, device);
  const int64_t bytes = weight_bytes(model);
  // On the CPU in huge pages, as the weights are (see HugePageArena).
  HugePageArena arena(device.is_cpu() ? 2 * HugePageArena::footprint(bytes / 4 * 4) : 0);
  const auto buffer = [&] {
    return device.is_cpu() ? arena.allocate({bytes / 4}, at::kFloat)
                           : at::empty({bytes / 4}, at::TensorOptions().dtype(at::kFloat).device(device));
  };
  const at::Tensor source = buffer().uniform_(), destination = buffer();
  Pass step(model, batch, context, 1), verification(model, batch, context, positions);
  for (int i = 0; i < 3; ++i) step.run(), verification.run();  // warm caches and allocator

  std::vector<double> read, copy, multiply_add, step_s, verification_s, cost, step_of_limit;
  for (int r = 0; r < repeats; ++r) {
    Clock::time_point start = Clock::now();
    source.sum().item<float>();
    read.push_back(static_cast<double>(bytes) / seconds_since(start) / 1e9);
    start = Clock::now();
    destination.copy_(source);
    finish(destination);
    copy.push_back(2.0 * static_cast<double>(bytes) / seconds_since(start) / 1e9);
    if (device.is_cpu()) multiply_add.push_back(multiply_add_gflop_per_s(model));
    step_s.push_back(step.time(5));
    verification_s.push_back(verification.time(5));
    cost.push_back(verification_s.back() / step_s.back());
    step_of_limit.push_back(static_cast<double>(bytes) / (read.back() * 1e9) / step_s.back());
  }
  std::vector<double> step_ms, verification_ms;
  for (double s : step_s) step_ms.push_back(s * 1e3);
  for (double s : verification_s) verification_ms.push_back(s * 1e3);
  const double read_median = summary(read)["median"];
  // Keys seen: the step's row, context + 1; the pass's last position, context + positions, for all.
  const double step_flops = static_cast<double>(batch) * row_flops(model, context + 1);
  const double verification_flops = static_cast<double>(batch * positions) * row_flops(model, context + positions);
  json report = {{"dtype", dtype_name(dtype)},
          {"weight_bytes", bytes},
          {"read_gb_per_s", summary(read)},
          {"copy_gb_per_s", summary(copy)},
          {"limit_ms", static_cast<double>(bytes) / (read_median * 1e9) * 1e3},
          {"step_ms", summary(step_ms)},
          {"step_of_limit", summary(step_of_limit)},
          {"verification_ms", summary(verification_ms)},
          {"verification_in_steps", summary(cost)},
          {"step_anatomy", anatomy(step, 20, device.is_cuda())},
          {"verification_anatomy", anatomy(verification, 20, device.is_cuda())}};
  if (!multiply_add.empty()) {
    // A pass can beat neither reading its weights nor computing its products.
    const double rate = summary(multiply_add)["median"].get<double>() * 1e9;
    const double read_limit_s = static_cast<double>(bytes) / (read_median * 1e9);
    const double step_limit_s = std::max(read_limit_s, step_flops / rate);
    const double verification_limit_s = std::max(read_limit_s, verification_flops / rate);
    report["multiply_add_gflop_per_s"] = summary(multiply_add);
    report["step_gflop"] = step_flops / 1e9;
    report["verification_gflop"] = verification_flops / 1e9;
    report["step_compute_limit_ms"] = step_flops / rate * 1e3;
    report["verification_compute_limit_ms"] = verification_flops / rate * 1e3;
    report["verification_limit_in_steps"] = verification_limit_s / step_limit_s;
  }
  if (device.is_cuda()) report["decoding_by_attention_backend"] = attention_backends(model, context, repeats);
  return report;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

}  // namespace
}  // namespace specgate::benchmarks

int main(int argc, char** argv) {
  using namespace specgate;
  CLI::App app{"A checkpoint's decode step and verification pass against one core's read bandwidth, operator by operator"};
  std::filesystem::path checkpoint;
  int64_t batch = 1, context = 200, positions = 5;
  int repeats = 15;
  std::string dtypes = "float32,bfloat16", device_name = "cpu";
  app.add_option("checkpoint", checkpoint, "Checkpoint folder")->required()->check(CLI::ExistingDirectory);
  app.add_option("--batch", batch, "Rows of every pass")->check(CLI::Range(1, 1 << 10))->capture_default_str();
  app.add_option("--context", context, "Cached tokens before each pass")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--positions", positions, "Positions of the verification pass (K+1)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--repeats", repeats, "Interleaved repeats")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--dtypes", dtypes, "Comma-separated dtypes")->capture_default_str();
  app.add_option("--device", device_name, "cpu or cuda")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // bad flags exit 2, as conformance's do
  }
  const CpuConfiguration cpu = configure_cpu();
  nlohmann::json report = {{"checkpoint", checkpoint.filename().string()},
                           {"device", device_name},
                           {"threads", cpu.intra_op_threads},
                           {"math_library", cpu.math_library},
                           {"batch", batch},
                           {"context", context},
                           {"positions", positions},
                           {"repeats", repeats},
                           {"dtypes", nlohmann::json::array()}};
  try {
    const c10::Device device = device_from_name(device_name, "--device");
    for (const std::string& name : benchmarks::split(dtypes))
      report["dtypes"].push_back(
          benchmarks::measure(checkpoint, dtype_from_name(name, "--dtypes"), device, batch, context, positions, repeats));
  } catch (const std::exception& e) {
    std::cerr << "decode_anatomy: " << e.what() << "\n";
    return 2;
  }
  std::cout << report.dump(2) << "\n";
}
