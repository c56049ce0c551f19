#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/decoder.h"

namespace specgate {

// One batch from its first prompt pass to its last row's last round.
class BatchRun {
 public:
  virtual ~BatchRun() = default;
  // The prompt pass of `requests`, who then join the rows between rounds; or one round. Each
  // returns the rows that finished in it.
  virtual std::vector<SequenceResult> join(std::span<const SequenceRequest> requests) = 0;
  virtual std::vector<SequenceResult> round() = 0;
  // The rows still decoding.
  virtual const std::vector<Row>& rows() const = 0;
  // The row of `sequence_index`, if the batch holds it, leaves; the others are realigned.
  virtual void drop(int64_t sequence_index) = 0;

  bool done() const { return rows().empty(); }
};

// A decoder of up to `batch_size` rows (EQSPEC, trees): a step with requests queued is their
// prompt pass, after which they join the rows still decoding; any other step is one round.
// Places free as rows finish.
class BatchDecoder : public Decoder {
 public:
  int64_t free_places() const override;
  bool has_work() const override;
  std::vector<SequenceResult> step() override;
  void cancel(int64_t sequence_index) override;
  void visit_live(const LiveVisitor& visit) const override;

 protected:
  explicit BatchDecoder(int64_t batch_size) : batch_size_(batch_size) {}
  // Queues `request` for the next batch; admitting with no free place is a caller's error.
  void queue(SequenceRequest request);
  // An empty batch of up to `batch_size` rows, its caches sized for `requests` to join first.
  virtual std::unique_ptr<BatchRun> run(int64_t batch_size, std::span<const SequenceRequest> requests) = 0;

 private:
  int64_t batch_size_;
  std::vector<SequenceRequest> queued_;
  std::unique_ptr<BatchRun> batch_;
};

}  // namespace specgate
