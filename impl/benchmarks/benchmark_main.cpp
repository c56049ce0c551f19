#include <benchmark/benchmark.h>

#include "impl/common/allocator_tuning.h"

// As `conformance` runs: freed memory stays with the process.
int main(int argc, char** argv) {
  specgate::keep_freed_memory_for_reuse();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
