#include "property_tests/generators/decode_case_gen.h"

#include <algorithm>
#include <cmath>

#include "impl/decoding/batch_scheduler.h"
#include "impl/decoding/token_tree.h"

namespace specgate::gen {
namespace {

using props::DecodeCase;
using props::DraftKind;

std::vector<int64_t> prompt(int64_t length, int64_t vocab) {
  return *rc::gen::container<std::vector<int64_t>>(length, rc::gen::inRange<int64_t>(0, vocab));
}

// Drafts right per row per round. Random entries shrink toward K (every draft accepted).
std::vector<std::vector<int64_t>> script(const std::string& kind, int64_t rows, int64_t rounds, int64_t k) {
  std::vector<std::vector<int64_t>> table(rows, std::vector<int64_t>(rounds, k));
  if (kind == "all-reject") {
    for (auto& row : table) std::fill(row.begin(), row.end(), 0);
  } else if (kind == "alternating") {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t r = 0; r < rounds; ++r) table[i][r] = (i + r) % 2 == 0 ? k : 0;
    }
  } else if (kind == "one-row-rejects") {
    const int64_t rejecting = *rc::gen::inRange<int64_t>(0, rows);
    std::fill(table[rejecting].begin(), table[rejecting].end(), 0);
  } else if (kind == "random") {
    const auto accepts = rc::gen::map(rc::gen::inRange<int64_t>(0, k + 1), [k](int64_t wrong) { return k - wrong; });
    for (auto& row : table) row = *rc::gen::container<std::vector<int64_t>>(rounds, accepts);
  }
  return table;
}

// Tokens proposed per row per round: K everywhere, none anywhere, K in one row and none in the
// others, or random (shrinking toward K).
std::vector<std::vector<int64_t>> draft_lengths(const std::string& kind, int64_t rows, int64_t rounds, int64_t k) {
  std::vector<std::vector<int64_t>> table(rows, std::vector<int64_t>(rounds, k));
  if (kind == "all-empty") {
    for (auto& row : table) std::fill(row.begin(), row.end(), 0);
  } else if (kind == "one-row-full") {
    const int64_t full = *rc::gen::inRange<int64_t>(0, rows);
    for (int64_t i = 0; i < rows; ++i) {
      if (i != full) std::fill(table[i].begin(), table[i].end(), 0);
    }
  } else if (kind == "random") {
    const auto lengths = rc::gen::map(rc::gen::inRange<int64_t>(0, k + 1), [k](int64_t fewer) { return k - fewer; });
    for (auto& row : table) row = *rc::gen::container<std::vector<int64_t>>(rounds, lengths);
  }
  return table;
}

ExspecOptions exspec_options(int64_t rows) {
  ExspecOptions o;
  o.batch_size = *rc::gen::inRange<int64_t>(1, rows + 1);
  o.window = o.batch_size + *rc::gen::inRange<int64_t>(0, rows - o.batch_size + 3);
  o.sort_by_prompt_length = *rc::gen::arbitrary<bool>();
  if (*rc::gen::arbitrary<bool>())
    o.max_wait_steps = smallest_feasible_wait(o.window, o.batch_size) + *rc::gen::inRange<int64_t>(0, 3);
  return o;
}

}  // namespace

rc::Gen<props::ModelSpec> tiny_target() {
  return rc::gen::exec([] {
    props::ModelSpec m;
    m.family = *rc::gen::element<std::string>("qwen3", "llama", "qwen2", "mistral");
    m.layers = *rc::gen::inRange<int64_t>(1, 4);
    m.kv_heads = *rc::gen::inRange<int64_t>(1, 3);
    m.heads = m.kv_heads * *rc::gen::element<int64_t>(1, 2, 4);
    m.head_dim = *rc::gen::element<int64_t>(2, 4, 8);
    m.hidden = *rc::gen::element<int64_t>(8, 16);
    m.vocab = *rc::gen::element<int64_t>(32, 48, 64);
    m.qk_norm = *rc::gen::arbitrary<bool>();
    m.qkv_bias = m.family == "qwen2";
    if (m.family == "mistral") m.sliding_window = *rc::gen::inRange<int64_t>(2, 33);
    m.seed = *rc::gen::inRange<uint64_t>(0, 1000000);
    return m;
  });
}

rc::Gen<DecodeCase> decode_case(CaseShape shape) {
  return rc::gen::withSize([shape](int size) {
    return rc::gen::exec([shape, size] {
      const double grow = std::clamp(size, 0, 100) / 100.0;
      const int64_t max_rows = 1 + std::lround(15 * grow);
      const int64_t max_prompt = 1 + std::lround(47 * grow);
      const int64_t max_new = 1 + std::lround(63 * grow);

      DecodeCase c;
      c.target = *tiny_target();
      const int64_t vocab = c.target.vocab;
      const int64_t rows = *rc::gen::inRange<int64_t>(1, max_rows + 1);
      const bool equal_lengths = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
      const int64_t common_length = *rc::gen::inRange<int64_t>(1, max_prompt + 1);
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t length = equal_lengths ? common_length : *rc::gen::inRange<int64_t>(1, max_prompt + 1);
        c.prompts.push_back(prompt(length, vocab));
      }
      if (shape.tree) {
        // One shape for every row, or rows of two or three shapes and sizes.
        const int64_t kinds = *rc::gen::weightedElement<int64_t>({{2, 1}, {2, 2}, {1, 3}});
        c.k = 0;
        for (int64_t t = 0; t < kinds; ++t) {
          std::vector<int64_t>& parents = c.trees.emplace_back();
          const int64_t nodes = *rc::gen::inRange<int64_t>(t == 0 ? 1 : 0, 13);
          for (int64_t node = 0; node < nodes; ++node) parents.push_back(*rc::gen::inRange<int64_t>(-1, node));
          c.k = std::max(c.k, TreeShape(parents).max_depth());
        }
      } else {
        c.k = *rc::gen::inRange<int64_t>(1, 9);
      }
      c.max_new_tokens = *rc::gen::inRange<int64_t>(1, max_new + 1);

      const bool sampling =
          !shape.greedy_only && !shape.scripted_only && *rc::gen::weightedElement<bool>({{2, false}, {1, true}});
      if (shape.tree) {
        c.draft = DraftKind::kScriptOnly;
      } else if (shape.scripted_only) {
        c.draft = *rc::gen::element(DraftKind::kScriptedModel, DraftKind::kScriptOnly);
      } else if (sampling || shape.free_drafts) {
        c.draft = *rc::gen::element(DraftKind::kNearTarget, DraftKind::kIndependent, DraftKind::kNgram);
      } else {
        c.draft = *rc::gen::weightedElement<DraftKind>({{4, DraftKind::kScriptedModel},
                                                        {2, DraftKind::kNearTarget},
                                                        {1, DraftKind::kIndependent},
                                                        {2, DraftKind::kScriptOnly},
                                                        {2, DraftKind::kNgram}});
      }
      if (c.draft == DraftKind::kNgram) c.ngram_max = *rc::gen::inRange<int64_t>(1, 5);
      c.draft_seed = *rc::gen::inRange<uint64_t>(0, 1000000);
      if (c.draft == DraftKind::kNearTarget) c.draft_noise = *rc::gen::element(0.05, 0.2, 0.5);
      if (c.scripted()) {
        c.script_kind = *rc::gen::element<std::string>("all-accept", "random", "all-reject", "alternating",
                                                       "one-row-rejects");
        c.script = script(c.script_kind, rows, c.max_new_tokens, c.k);
        if (c.draft == DraftKind::kScriptOnly && !shape.tree) {
          c.lengths_kind = *rc::gen::element<std::string>("full", "all-empty", "one-row-full", "random");
          c.draft_lengths = draft_lengths(c.lengths_kind, rows, c.max_new_tokens, c.k);
        }
      } else {
        c.script_kind = "none";
        c.script.assign(rows, {});
      }
      if (*rc::gen::weightedElement<bool>({{2, false}, {1, true}})) {
        c.eos = props::EosSpec{*rc::gen::inRange<int64_t>(0, rows), *rc::gen::inRange<int64_t>(0, c.max_new_tokens)};
      }

      c.decoder = shape.exspec_only ? DecoderKind::kExspec : *rc::gen::element(DecoderKind::kEqspec, DecoderKind::kExspec);
      if (c.decoder == DecoderKind::kExspec) c.exspec = exspec_options(rows);
      if (sampling) {
        c.sampling.temperature = *rc::gen::element(1.0, 0.7, 1.5);
        c.sampling.top_k = *rc::gen::element<int64_t>(0, 3, 10);
        c.sampling.top_p = *rc::gen::element(1.0, 0.9, 0.6);
        c.sampling.min_p = *rc::gen::element(0.0, 0.0, 0.2);
        c.sampling.seed = *rc::gen::inRange<uint64_t>(0, 1000000);
      }

      c.watched_row = *rc::gen::inRange<int64_t>(0, rows);
      c.replacements = c.prompts;
      if (shape.isolation) {
        for (int64_t i = 0; i < rows; ++i) {
          if (i != c.watched_row) c.replacements[i] = prompt(*rc::gen::inRange<int64_t>(1, max_prompt + 1), vocab);
        }
      }
      return c;
    });
  });
}

}  // namespace specgate::gen
