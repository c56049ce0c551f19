#pragma once

#include <cstdint>
#include <optional>

#include "impl/model/transformer.h"
#include "property_tests/properties/decode_case.h"

namespace specgate::props {

// The float64 target a spec describes, with its seeded random weights.
Transformer build_target(const ModelSpec& spec);

// The draft model of a case: a one-layer model of the target's shape (kScriptedModel,
// kIndependent), the target's weights plus relative noise (kNearTarget), or none
// (kScriptOnly).
std::optional<Transformer> build_draft(const ModelSpec& target_spec, const Transformer& target, DraftKind kind,
                                       uint64_t seed, double noise);

}  // namespace specgate::props
