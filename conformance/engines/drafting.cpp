#include "conformance/engines/drafting.h"

#include "impl/common/error.h"
#include "impl/decoding/model_drafter.h"

namespace specgate::cli {

bool needs_draft_model(Engine engine, const Drafting& drafting) { return speculates(engine) && !drafting.ngram; }

void check_draft_flag(Engine engine, const Drafting& drafting, bool draft_given) {
  const std::string name = engine_name(engine);
  if (needs_draft_model(engine, drafting) && !draft_given)
    throw InputError("--engine " + name + " needs --draft DIR, or --drafter ngram");
  if (!needs_draft_model(engine, drafting) && draft_given)
    throw InputError(speculates(engine) ? "--draft: --drafter ngram uses no draft model"
                                        : "--draft: engine " + name + " uses no draft model");
}

std::unique_ptr<Drafter> make_drafter(Engine engine, const Drafting& drafting, const Transformer* draft,
                                      const ScriptedDrafts* script) {
  if (!speculates(engine)) return nullptr;
  if (drafting.ngram) return std::make_unique<NgramDrafter>(drafting.lookup);
  return std::make_unique<ModelDrafter>(*draft, script);
}

}  // namespace specgate::cli
