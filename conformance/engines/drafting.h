#pragma once

#include <memory>
#include <string>

#include "conformance/engines/engine.h"
#include "impl/decoding/drafter.h"
#include "impl/decoding/ngram_drafter.h"
#include "impl/decoding/scripted_drafter.h"
#include "impl/model/transformer.h"

namespace specgate::cli {

// How a speculative engine drafts: with the draft model of --draft, or by n-gram lookup in
// each sequence's own context (--drafter ngram), which needs none.
struct Drafting {
  bool ngram = false;
  NgramOptions lookup;

  std::string name() const { return ngram ? "ngram" : "model"; }
};

// Whether `engine`, drafting as `drafting`, needs a draft model.
bool needs_draft_model(Engine engine, const Drafting& drafting);

// InputError when --draft is missing for an engine that needs it, or given to one that does not.
void check_draft_flag(Engine engine, const Drafting& drafting, bool draft_given);

// What `engine` drafts with: nothing for the oracle and nonspec-batch, an NgramDrafter, or a
// ModelDrafter over `draft` (choosing `script`'s tokens when given).
std::unique_ptr<Drafter> make_drafter(Engine engine, const Drafting& drafting, const Transformer* draft,
                                      const ScriptedDrafts* script = nullptr);

}  // namespace specgate::cli
