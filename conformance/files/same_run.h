#pragma once

#include <nlohmann/json.hpp>

#include "impl/common/json_line_context.h"

namespace specgate::cli {

// InputError, naming the line of `recorded` (an answer line read back by --resume) and the first
// setting in which it differs from `expected` (the line this run writes, as answer_json() makes
// it): the engine or API, the server collected from, the models (model_id, run.draft), run.dtype,
// run.sampling, the chat template, run.max_new_tokens, then the rest of run (drafter,
// draft_tokens, ngram, tree, window, batch_size, and any other) but when it started and each
// answer's random stream. A line
// without chat_template had its prompt ids from the bench and is not checked for it; one of a
// model-drafting run without run.draft was written before the draft and the tree were
// recorded and is not checked for them.
void check_same_run(const nlohmann::json& recorded, const nlohmann::json& expected, const LineContext& line);

}  // namespace specgate::cli
