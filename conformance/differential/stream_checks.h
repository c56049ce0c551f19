#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "conformance/differential/side_channels.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate::cli {

// Each turn of `streamed`, read from a stream, against itself and the same turn of `whole`,
// answered whole. Always: stream_detokenized when its chunks' text put together is not the text
// of their ids (with `tokenizer`; bytes that are not UTF-8 read as U+FFFD), stream_usage when its
// usage count is not the number of ids. Where it gives the whole answer's ids (or either gives
// none): stream_text when its text is not the whole answer's, stream_finish_reason and
// stream_usage when its finish reason or count differ from the whole answer's. Other ids are a
// difference the caller attributes, as any in a crowd. A text finding names the chunk (from 1)
// and the byte where the stream first goes wrong.
std::vector<SideChannelFinding> compare_streams(const ReportedTurns& whole, const ReportedTurns& streamed,
                                                const Tokenizer* tokenizer);

// How many of `turns`' chunks carried each number of tokens: speculation shows as chunks of
// several tokens. Streams without ids are left out.
std::map<int64_t, int64_t> chunk_sizes(const ReportedTurns& turns);

}  // namespace specgate::cli
