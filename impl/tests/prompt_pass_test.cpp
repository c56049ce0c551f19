// The packed prompt pass: how prompts are dealt to packs, and that each prompt's K/V and last
// hidden state equal those of its pass alone, with and without a sliding window.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "fixtures/models/tiny_configs.h"
#include "impl/decoding/prompt_pass.h"
#include "impl/model/transformer.h"
#include "impl/model/weights.h"

namespace specgate {
namespace {

std::vector<Row> rows_of_lengths(const std::vector<int64_t>& lengths) {
  std::vector<Row> rows;
  for (size_t i = 0; i < lengths.size(); ++i) {
    SequenceRequest request{.sequence_index = static_cast<int64_t>(i)};
    for (int64_t j = 0; j < lengths[i]; ++j) request.prompt.push_back((31 * j + 7 * static_cast<int64_t>(i) + 3) % 256);
    rows.emplace_back(request, DecodeOptions{});
  }
  return rows;
}

TEST(PromptPacking, DealsTheLongestPromptsFirstToTheEmptiestPack) {
  const PromptPacking packing(rows_of_lengths({300, 700, 200, 500}));
  EXPECT_EQ(packing.packs, 2) << "1,700 tokens in packs of 1,024";
  EXPECT_EQ(packing.width, 900);
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> expected = {{1, 500, 300}, {0, 0, 700}, {0, 700, 200},
                                                                       {1, 0, 500}};
  for (size_t i = 0; i < expected.size(); ++i) {
    const SlotRun& run = packing.runs[i];
    EXPECT_EQ(std::tuple(run.row, run.first, run.count), expected[i]) << "row " << i;
  }
}

TEST(PromptPacking, APromptLongerThanAPackWidensEveryPack) {
  const PromptPacking packing(rows_of_lengths({10, 2000}));
  EXPECT_EQ(packing.packs, 2);
  EXPECT_EQ(packing.width, 2000);
  EXPECT_EQ(packing.runs[0].row, 1);
}

// Each prompt's last hidden state and K/V against a pass over that prompt alone.
void expect_each_as_alone(const Transformer& model, const std::vector<int64_t>& lengths) {
  const std::vector<Row> rows = rows_of_lengths(lengths);
  const PromptPacking packing(rows);
  const PromptPass pass = prompt_pass(model, rows, packing);
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE("prompt " + std::to_string(i));
    const int64_t n = rows[i].content();
    KVCache alone = model.make_cache(1, n);
    const at::Tensor hidden = model.forward(at::tensor(rows[i].tokens, at::kLong).unsqueeze(0),
                                            at::arange(n, at::kLong).unsqueeze(0), at::ones({1, n}, at::kBool), &alone);
    EXPECT_TRUE(at::allclose(pass.last_hidden[i], hidden[0][n - 1], 1e-10, 1e-12));
    const SlotRun& run = packing.runs[i];
    for (int64_t layer = 0; layer < model.config().num_layers; ++layer) {
      EXPECT_TRUE(at::allclose(pass.cache.keys(layer)[run.row].narrow(1, run.first, n), alone.keys(layer)[0], 1e-10,
                               1e-12));
      EXPECT_TRUE(at::allclose(pass.cache.values(layer)[run.row].narrow(1, run.first, n), alone.values(layer)[0],
                               1e-10, 1e-12));
    }
  }
}

TEST(PromptPass, EachPackedPromptIsAsIfItRanAlone) {
  for (const char* type : {"qwen3", "mistral"}) {  // mistral: a sliding window
    SCOPED_TRACE(type);
    const ModelConfig config = tiny_config(type);
    const Transformer model(config, random_weights(config, at::TensorOptions().dtype(at::kDouble), 5));
    expect_each_as_alone(model, {5, 9, 1, 12});     // one pack
    expect_each_as_alone(model, {300, 400, 200});  // one pack, passed in several chunks
    expect_each_as_alone(model, {1000, 900});       // a pack each
  }
}

}  // namespace
}  // namespace specgate
