#pragma once

namespace specgate {

// Every batch decoder. naive-realign is EQSPEC re-laid out as published decoders do;
// rollback is EQSPEC truncating every row to the batch's fewest accepted drafts; exspec-aging
// is EXSPEC with a bound on how long a sequence waits (ExspecOptions::max_wait_steps).
enum class DecoderKind { kNonspecBatch, kEqspec, kNaiveRealign, kRollback, kExspec, kExspecAging };

inline bool is_exspec(DecoderKind kind) { return kind == DecoderKind::kExspec || kind == DecoderKind::kExspecAging; }

}  // namespace specgate
