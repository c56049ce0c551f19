#include <algorithm>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "fixtures/models/tiny_configs.h"
#include "impl/common/dtype.h"
#include "impl/common/error.h"
#include "impl/model/kv_cache.h"
#include "impl/model/transformer.h"
#include "impl/model/weights.h"
#include "impl/tokenizer/byte_tokenizer.h"
#include "impl/tests/tensor_test_support.h"

namespace specgate {

void PrintTo(const NamedConfig& variant, std::ostream* out) { *out << variant.name; }

namespace {

using test_support::kLong;
const auto kBool = at::TensorOptions().dtype(at::kBool);

Transformer random_model(const ModelConfig& config, at::ScalarType dtype = at::kDouble, uint64_t seed = 7) {
  return Transformer(config, random_weights(config, at::TensorOptions().dtype(dtype), seed));
}

std::vector<int64_t> some_tokens(int64_t n, int64_t salt) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back((37 * i + 11 * salt + 5) % 256);
  return ids;
}

// Logits [T, V] of one unpadded sequence in a single full pass, without a cache.
at::Tensor full_pass_logits(const Transformer& model, const std::vector<int64_t>& ids) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const at::Tensor tokens = at::tensor(ids, kLong).unsqueeze(0);
  const at::Tensor hidden = model.forward(tokens, at::arange(n, kLong).unsqueeze(0), at::ones({1, n}, kBool), nullptr);
  return model.logits(hidden).squeeze(0);
}

class EveryVariant : public testing::TestWithParam<NamedConfig> {};

TEST_P(EveryVariant, IncrementalDecodingThroughTheCacheEqualsAFullPass) {
  const Transformer model = random_model(GetParam().config);
  const std::vector<int64_t> ids = some_tokens(14, 1);
  const at::Tensor expected = full_pass_logits(model, ids);

  KVCache cache = model.make_cache(1, 4);  // too small on purpose: the cache grows
  std::vector<at::Tensor> pieces;
  for (const auto& [begin, end] : {std::pair{0, 5}, std::pair{5, 6}, std::pair{6, 9}, std::pair{9, 10},
                                  std::pair{10, 14}}) {
    const at::Tensor tokens = at::tensor(std::vector<int64_t>(ids.begin() + begin, ids.begin() + end), kLong);
    const at::Tensor hidden = model.forward(tokens.unsqueeze(0), at::arange(begin, end, kLong).unsqueeze(0),
                                            at::ones({1, end}, kBool), &cache);
    pieces.push_back(model.logits(hidden).squeeze(0));
  }
  EXPECT_EQ(cache.length(), 14);
  const at::Tensor incremental = at::cat(pieces);
  EXPECT_TRUE(at::allclose(incremental, expected, /*rtol=*/0, /*atol=*/1e-10))
      << (incremental - expected).abs().max().item<double>();
}

TEST_P(EveryVariant, ALongPromptPrefilledInChunksEqualsAFullPass) {
  const Transformer model = random_model(GetParam().config);
  const std::vector<int64_t> ids = some_tokens(300, 2);  // more than one chunk
  const at::Tensor expected = full_pass_logits(model, ids);
  // A wide batch runs in smaller chunks, so that its attention scores stay small.
  for (int64_t batch : {1, 48}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    KVCache cache = model.make_cache(batch, 8);
    const at::Tensor hidden =
        model.forward(at::tensor(ids, kLong).unsqueeze(0).expand({batch, 300}), at::arange(300, kLong).expand({batch, 300}),
                      at::ones({batch, 300}, kBool), &cache);
    EXPECT_EQ(cache.length(), 300);
    const at::Tensor chunked = model.logits(hidden);
    for (int64_t row = 0; row < batch; ++row) {
      EXPECT_TRUE(at::allclose(chunked[row], expected, /*rtol=*/0, /*atol=*/1e-10))
          << "row " << row << ": " << (chunked[row] - expected).abs().max().item<double>();
    }
  }
}

// Rows of `lengths` tokens, left-padded to the longest, then three steps each: every row's
// logits equal those of a pass over it alone (within `tolerance`), and the padding tokens change
// no bit.
void expect_left_padded_rows_equal_each_row_alone(const Transformer& model, const std::vector<int64_t>& lengths,
                                                  double tolerance = 1e-10) {
  const int64_t batch = static_cast<int64_t>(lengths.size()), extra_steps = 3;
  const int64_t width = *std::max_element(lengths.begin(), lengths.end());

  // Each row alone, prompt plus three continuation tokens in one pass.
  std::vector<std::vector<int64_t>> rows;
  std::vector<at::Tensor> alone;
  for (int64_t b = 0; b < batch; ++b) {
    rows.push_back(some_tokens(lengths[b] + extra_steps, b));
    alone.push_back(full_pass_logits(model, rows[b]));
  }

  auto run_batch = [&](int64_t padding_token) {
    at::Tensor tokens = at::full({batch, width}, padding_token, kLong);
    at::Tensor positions = at::zeros({batch, width}, kLong);
    at::Tensor valid = at::zeros({batch, width}, kBool);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t pad = width - lengths[b];
      for (int64_t j = 0; j < lengths[b]; ++j) {
        tokens[b][pad + j] = rows[b][j];
        positions[b][pad + j] = j;
        valid[b][pad + j] = true;
      }
    }
    KVCache cache = model.make_cache(batch, width + extra_steps);
    std::vector<at::Tensor> logits = {model.logits(model.forward(tokens, positions, valid, &cache))};
    for (int64_t step = 0; step < extra_steps; ++step) {
      at::Tensor next = at::empty({batch, 1}, kLong), next_positions = at::empty({batch, 1}, kLong);
      for (int64_t b = 0; b < batch; ++b) {
        next[b][0] = rows[b][lengths[b] + step];
        next_positions[b][0] = lengths[b] + step;
      }
      valid = at::cat({valid, at::ones({batch, 1}, kBool)}, 1);
      logits.push_back(model.logits(model.forward(next, next_positions, valid, &cache)));
    }
    return at::cat(logits, 1);  // [B, width + extra_steps, V]
  };

  const at::Tensor batched = run_batch(ByteTokenizer::kPad);
  for (int64_t b = 0; b < batch; ++b) {
    const at::Tensor content = batched[b].narrow(0, width - lengths[b], lengths[b] + extra_steps);
    EXPECT_TRUE(at::allclose(content, alone[b], 0, tolerance))
        << "row " << b << ": " << (content - alone[b]).abs().max().item<double>();
  }
  // Masked keys have no influence at all: other padding tokens give bit-identical results.
  const at::Tensor repadded = run_batch(42);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t pad = width - lengths[b];
    EXPECT_TRUE(at::equal(repadded[b].narrow(0, pad, lengths[b] + extra_steps),
                          batched[b].narrow(0, pad, lengths[b] + extra_steps)))
        << "row " << b;
  }
}

TEST_P(EveryVariant, LeftPaddedBatchRowsEqualEachRowAlone) {
  expect_left_padded_rows_equal_each_row_alone(random_model(GetParam().config), {5, 1, 9, 3});
}

// The same in float32, where a decode step's attention is few_query_attention's and a long
// pass's libtorch's: the two agree within float32's rounding.
TEST_P(EveryVariant, LeftPaddedBatchRowsEqualEachRowAloneInFloat32) {
  expect_left_padded_rows_equal_each_row_alone(random_model(GetParam().config, at::kFloat), {5, 1, 9, 3}, 1e-4);
}

// Padding whose K/V take a megabyte a layer: attention runs row by row over each row's keys.
TEST(Transformer, ALongLeftPaddingIsLeftOutRowByRow) {
  ModelConfig config = tiny_config("llama");
  config.num_heads = 8;
  config.num_kv_heads = 4;
  config.head_dim = 64;  // 4 KB of K and V a key in float64: 300 keys of padding take 1.2 MB
  expect_left_padded_rows_equal_each_row_alone(random_model(config), {310, 10, 12});
}

// A verification pass that reads each row's first positions alone (its pending token and its own
// drafts, not the padding after them): those hidden states are the ones of a pass that reads all.
TEST_P(EveryVariant, APassReadingSomePositionsGivesThemTheirHiddenStates) {
  const Transformer model = random_model(GetParam().config);
  const int64_t batch = 3, context = 6, steps = 5;
  const std::vector<int64_t> read_lengths = {1, 5, 3};  // positions read in each row
  const at::Tensor prompt = at::tensor(some_tokens(batch * context, 4), kLong).view({batch, context});
  const at::Tensor drafts = at::tensor(some_tokens(batch * steps, 5), kLong).view({batch, steps});
  const at::Tensor valid = at::ones({batch, context + steps}, kBool);
  auto verify = [&](const at::Tensor& read_rows) {
    KVCache cache = model.make_cache(batch, context + steps);
    model.forward(prompt, at::arange(context, kLong).expand({batch, context}), valid.narrow(1, 0, context), &cache);
    return model.forward(drafts, at::arange(context, context + steps, kLong).expand({batch, steps}), valid, &cache,
                         read_rows);
  };
  std::vector<int64_t> read;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < read_lengths[b]; ++t) read.push_back(b * steps + t);
  }
  const at::Tensor all = verify(at::Tensor()), some = verify(at::tensor(read, kLong));
  for (int64_t b = 0; b < batch; ++b) {
    const at::Tensor expected = all[b].narrow(0, 0, read_lengths[b]), got = some[b].narrow(0, 0, read_lengths[b]);
    EXPECT_TRUE(at::allclose(got, expected, 0, 1e-10)) << "row " << b << ": " << (got - expected).abs().max().item<double>();
  }
  EXPECT_TRUE(some.isfinite().all().item<bool>());
}

TEST_P(EveryVariant, LowerPrecisionsStayCloseToFloat64) {
  const std::vector<int64_t> ids = some_tokens(12, 3);
  const at::Tensor reference = full_pass_logits(random_model(GetParam().config, at::kDouble), ids);
  for (const auto& [dtype, tolerance] : {std::pair{at::kFloat, 1e-4}, std::pair{at::kBFloat16, 0.3},
                                        std::pair{at::kHalf, 0.05}}) {
    const at::Tensor logits = full_pass_logits(random_model(GetParam().config, dtype), ids);
    EXPECT_EQ(logits.scalar_type(), dtype);
    EXPECT_FALSE(logits.isnan().any().item<bool>());
    const double error = (logits.to(at::kDouble) - reference).abs().max().item<double>();
    EXPECT_LT(error, tolerance) << c10::toString(dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(Transformer, EveryVariant, testing::ValuesIn(tiny_variants()),
                         [](const testing::TestParamInfo<NamedConfig>& info) { return info.param.name; });

TEST(TransformerDtypes, EveryDtypeRunsOnCpu) {
  for (const at::ScalarType dtype : {at::kDouble, at::kFloat, at::kBFloat16, at::kHalf}) {
    const ModelConfig config = tiny_config("llama");
    const at::Tensor logits = full_pass_logits(random_model(config, dtype), some_tokens(4, 0));
    EXPECT_EQ(logits.scalar_type(), dtype);
  }
}

TEST(TransformerSlidingWindow, KeysOutsideTheWindowHaveNoInfluence) {
  ModelConfig config = tiny_config("mistral");
  config.num_layers = 1;  // with more layers, influence travels one window per layer
  const Transformer model = random_model(config);
  std::vector<int64_t> ids = some_tokens(12, 4);
  const at::Tensor before = full_pass_logits(model, ids);
  ids[0] = (ids[0] + 1) % 256;
  const at::Tensor after = full_pass_logits(model, ids);
  const int64_t window = *config.sliding_window;
  EXPECT_FALSE(at::equal(before.narrow(0, 0, window), after.narrow(0, 0, window)));
  EXPECT_TRUE(at::equal(before.narrow(0, window, 12 - window), after.narrow(0, window, 12 - window)));
}

TEST(TransformerRope, Llama3ScalingMatchesTheReferenceFormula) {
  for (const NamedConfig& variant : tiny_variants()) {
    if (variant.name != "llama3_rope") continue;
    const RotaryEmbedding rope(variant.config, at::TensorOptions().dtype(at::kDouble));
    const at::Tensor expected = at::tensor({1.0, 0.0273441373147213, 0.00017677669529663688, 6.647869871181236e-06},
                                           at::TensorOptions().dtype(at::kDouble));
    EXPECT_TRUE(at::allclose(rope.inverse_frequencies(), expected, 1e-12, 0));
    return;
  }
  FAIL() << "no llama3_rope variant";
}

TEST(TransformerRope, LinearScalingDividesEveryFrequency) {
  ModelConfig plain = tiny_config("llama");
  ModelConfig scaled = plain;
  scaled.rope_scaling = {RopeScaling::Kind::kLinear, 4.0};
  const auto options = at::TensorOptions().dtype(at::kDouble);
  EXPECT_TRUE(at::allclose(RotaryEmbedding(scaled, options).inverse_frequencies() * 4.0,
                           RotaryEmbedding(plain, options).inverse_frequencies()));
}

}  // namespace
}  // namespace specgate
