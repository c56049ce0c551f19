#pragma once

namespace specgate {

// Why a sequence stopped: its first EOS, or max_new_tokens.
enum class FinishReason { kEos, kLength };

}  // namespace specgate
