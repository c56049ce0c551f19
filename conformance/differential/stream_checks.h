#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "conformance/differential/side_channels.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate::cli {

// Each turn of `streamed`, read from a stream, against the same turn of `whole`, answered whole:
// stream_ids when its chunks' ids put together are not the whole answer's; stream_text when
// their text is not the whole answer's, stream_detokenized when it is not the text of its own ids
// (with `tokenizer`; bytes that are not UTF-8 read as U+FFFD); stream_finish_reason and
// stream_usage when the finish reason or the usage count differ from the whole answer's, or the
// count from the ids the stream gave. Each names the chunk (from 1) and the token or byte
// where the stream first goes wrong.
std::vector<SideChannelFinding> compare_streams(const ReportedTurns& whole, const ReportedTurns& streamed,
                                                const Tokenizer* tokenizer);

// How many of `turns`' chunks carried each number of tokens: speculation shows as chunks of
// several tokens. Streams without ids are left out.
std::map<int64_t, int64_t> chunk_sizes(const ReportedTurns& turns);

}  // namespace specgate::cli
