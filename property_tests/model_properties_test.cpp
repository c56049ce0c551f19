#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "impl/model/kv_cache.h"
#include "impl/model/transformer.h"
#include "impl/model/weights.h"
#include "impl/tokenizer/byte_tokenizer.h"
#include "property_tests/generators/model_gen.h"

namespace specgate {
namespace {

const auto kLong = at::TensorOptions().dtype(at::kLong);
const auto kBool = at::TensorOptions().dtype(at::kBool);

at::Tensor alone_logits(const Transformer& model, const std::vector<int64_t>& ids) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const at::Tensor hidden =
      model.forward(at::tensor(ids, kLong).unsqueeze(0), at::arange(n, kLong).unsqueeze(0), at::ones({1, n}, kBool), nullptr);
  return model.logits(hidden).squeeze(0);
}

// The foundation every batch decoder stands on: in a left-padded batch run through the cache
// in chunks, each row's logits equal those of the row alone (float64), whatever the
// architecture, the batch shape and the padding.
RC_GTEST_PROP(ModelProperties, LeftPaddedBatchRowsEqualEachRowAlone, ()) {
  const ModelConfig config = *gen::tiny_model_config();
  const Transformer model(config, random_weights(config, at::TensorOptions().dtype(at::kDouble), *rc::gen::arbitrary<uint32_t>()));
  const auto lengths = *rc::gen::container<std::vector<int64_t>>(*rc::gen::inRange<size_t>(1, 9), rc::gen::inRange<int64_t>(1, 25));
  const int64_t chunk = *rc::gen::inRange<int64_t>(1, 5);
  const int64_t batch = static_cast<int64_t>(lengths.size());
  const int64_t width = *std::max_element(lengths.begin(), lengths.end());

  at::Tensor tokens = at::full({batch, width}, ByteTokenizer::kPad, kLong);
  at::Tensor positions = at::zeros({batch, width}, kLong);
  at::Tensor valid = at::zeros({batch, width}, kBool);
  std::vector<std::vector<int64_t>> rows;
  for (int64_t b = 0; b < batch; ++b) {
    rows.push_back(*rc::gen::container<std::vector<int64_t>>(lengths[b], rc::gen::inRange<int64_t>(0, 256)));
    const int64_t pad = width - lengths[b];
    for (int64_t j = 0; j < lengths[b]; ++j) {
      tokens[b][pad + j] = rows[b][j];
      positions[b][pad + j] = j;
      valid[b][pad + j] = true;
    }
  }
  KVCache cache = model.make_cache(batch, width);
  std::vector<at::Tensor> pieces;
  for (int64_t start = 0; start < width; start += chunk) {
    const int64_t steps = std::min(chunk, width - start);
    pieces.push_back(model.logits(model.forward(tokens.narrow(1, start, steps), positions.narrow(1, start, steps),
                                                valid.narrow(1, 0, start + steps), &cache)));
  }
  const at::Tensor batched = at::cat(pieces, 1);
  for (int64_t b = 0; b < batch; ++b) {
    const at::Tensor row = batched[b].narrow(0, width - lengths[b], lengths[b]);
    const double error = (row - alone_logits(model, rows[b])).abs().max().item<double>();
    RC_ASSERT(error < 1e-10);
  }
}

}  // namespace
}  // namespace specgate
