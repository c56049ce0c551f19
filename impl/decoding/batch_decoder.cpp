#include "impl/decoding/batch_decoder.h"

#include <c10/util/Exception.h>

namespace specgate {

int64_t BatchDecoder::free_places() const {
  const size_t decoding = batch_ != nullptr ? batch_->rows().size() : 0;
  return batch_size_ - static_cast<int64_t>(decoding + queued_.size());
}

bool BatchDecoder::has_work() const { return batch_ != nullptr || !queued_.empty(); }

void BatchDecoder::queue(SequenceRequest request) {
  TORCH_CHECK(free_places() > 0, "admit() with a full batch");
  queued_.push_back(std::move(request));
}

std::vector<SequenceResult> BatchDecoder::step() {
  std::vector<SequenceResult> finished;
  if (!queued_.empty()) {
    if (batch_ == nullptr) batch_ = run(batch_size_, queued_);
    finished = batch_->join(queued_);
    queued_.clear();
  } else if (batch_ != nullptr) {
    finished = batch_->round();
  }
  if (batch_ != nullptr && batch_->done()) batch_.reset();
  return finished;
}

void BatchDecoder::cancel(int64_t sequence_index) {
  std::erase_if(queued_, [&](const SequenceRequest& request) { return request.sequence_index == sequence_index; });
  if (batch_ == nullptr) return;
  batch_->drop(sequence_index);
  if (batch_->done()) batch_.reset();
}

void BatchDecoder::visit_live(const LiveVisitor& visit) const {
  if (batch_ == nullptr) return;
  for (const Row& row : batch_->rows()) visit(row.sequence_index, std::span(row.tokens).subspan(row.prompt_length));
}

}  // namespace specgate
