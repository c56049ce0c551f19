#include "impl/common/huge_page_arena.h"

#include <sys/mman.h>

#include <new>

#include <c10/util/Exception.h>

namespace specgate {
namespace {

constexpr int64_t kHugePage = int64_t{2} << 20;

}  // namespace

HugePageArena::HugePageArena(int64_t bytes) : capacity_(bytes) {
  TORCH_CHECK(bytes >= 0, "HugePageArena: negative size");
  // Mapped a huge page longer than asked, so that the arena can start on a huge page boundary.
  const size_t mapped = static_cast<size_t>((bytes + kHugePage - 1) / kHugePage * kHugePage + kHugePage);
  void* mapping = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) throw std::bad_alloc();
  const auto start = (reinterpret_cast<uintptr_t>(mapping) + kHugePage - 1) / kHugePage * kHugePage;
  char* aligned = reinterpret_cast<char*>(start);
  madvise(aligned, mapped - (start - reinterpret_cast<uintptr_t>(mapping)), MADV_HUGEPAGE);  // advice: may be refused
  region_ = std::shared_ptr<char>(aligned, [mapping, mapped](char*) { munmap(mapping, mapped); });
}

at::Tensor HugePageArena::allocate(at::IntArrayRef sizes, at::ScalarType dtype) {
  const int64_t bytes = c10::multiply_integers(sizes) * static_cast<int64_t>(c10::elementSize(dtype));
  TORCH_CHECK(used_ + footprint(bytes) <= capacity_, "HugePageArena: full");
  char* data = region_.get() + used_;
  used_ += footprint(bytes);
  return at::from_blob(data, sizes, [keep = region_](void*) {}, at::TensorOptions().dtype(dtype));
}

}  // namespace specgate
