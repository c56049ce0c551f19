#pragma once

#include <span>
#include <string>
#include <string_view>

#include "impl/decoding/decoder_kind.h"

namespace specgate::cli {

// Every decoder a command can run. naive-realign is EQSPEC re-laid out as published decoders
// do; exspec-aging is EXSPEC with a bound on how long a sequence waits; rollback is EQSPEC
// truncating every row to the batch's fewest accepted drafts; tree is EQSPEC's layout with a
// token tree drafted and verified a round (EngineSpec::tree), as bench names it.
enum class Engine { kOracle, kNonspecBatch, kEqspec, kNaiveRealign, kExspec, kExspecAging, kRollback, kTree };

// `name` among the engines a command offers; InputError naming `flag` and the choices otherwise.
Engine engine_from_name(std::string_view name, std::span<const Engine> choices, std::string_view flag);
std::string engine_name(Engine engine);
// Whether `engine` drafts and verifies (every engine but the oracle and nonspec-batch).
bool speculates(Engine engine);
bool is_exspec(Engine engine);
// The batch decoder an engine other than the oracle runs.
DecoderKind decoder_kind(Engine engine);

}  // namespace specgate::cli
