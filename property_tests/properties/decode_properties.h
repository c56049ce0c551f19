#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impl/decoding/faults.h"
#include "property_tests/generators/decode_case_gen.h"
#include "property_tests/properties/decode_case.h"

namespace specgate::props {

// What a property found wrong with one case; empty when it holds.
using CaseFailure = std::optional<std::string>;

// One property of the batch decoders over generated cases. `check` runs the decoder the case
// names with `faults` injected; an exception thrown by the decoder is a failure too.
struct DecodeProperty {
  std::string_view name;
  std::string_view statement;
  gen::CaseShape shape;
  CaseFailure (*check)(const DecodeCase& decode_case, const FaultSet& faults);
};

// In the order the mutant runner tries them:
//  oracle-equivalence   greedy: every row's output equals the oracle's, token for token;
//  invariants           I1-I4 hold after every round (the decoders' InvariantChecker);
//  scripted-acceptance  scripted drafts: each round keeps exactly the scripted drafts plus
//                       one, and DecodeStats count what the rows did;
//  row-isolation        a row's output and acceptance never change when every other row's
//                       prompt is replaced, nor when it runs alone;
//  exspec-pool          EXSPEC: every sequence finishes exactly once, results in request order;
//  determinism          the same case twice gives the same results and counters, and (greedy
//                       or sampling) no sequence changes when the batch is reversed;
//  cancellation         sequences cancelled while waiting or mid-decode leave at once, I1-I4
//                       hold after every round, and no other sequence changes;
//  mixed-sampling       rows of one batch sampled five ways (greedy, temperature, top-k, top-p,
//                       min-p) each give what a batch of their own setting gives them;
//  tree-equivalence     greedy token trees (EQSPEC or EXSPEC verifying generated trees, the script's branch
//                       moving between siblings): every row's output equals the oracle's.
const std::vector<DecodeProperty>& decode_properties();
// Throws InputError listing the known names.
const DecodeProperty& decode_property(std::string_view name);

// Draws a case for `property` inside a RapidCheck property, checks it under `faults` and
// fails the property with the verdict. `on_failure` sees every failing case; the last one it
// sees is the shrunk counterexample.
using FailureSink = std::function<void(const DecodeCase&, const std::string& verdict)>;
void check_generated_case(const DecodeProperty& property, const FaultSet& faults, const FailureSink& on_failure = {});

}  // namespace specgate::props
