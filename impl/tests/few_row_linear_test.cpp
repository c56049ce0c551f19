#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <gtest/gtest.h>

#include "impl/model/few_row_linear.h"

namespace specgate {
namespace {

// Shapes with and without a tail past the vector width (16 and 8 floats), an odd number of
// output rows (the kernel takes them two at a time), and the real model's.
struct Shape {
  int64_t in, out;
};
constexpr Shape kShapes[] = {{576, 1536}, {37, 11}, {8, 3}, {3, 5}, {64, 259}};

// Every count of rows one pass takes, counts that leave a last pass of one row or of several,
// and kFewRows.
std::vector<int64_t> row_counts() {
  std::vector<int64_t> counts;
  for (int64_t rows = 1; rows <= kRowsAPass + 2; ++rows) counts.push_back(rows);
  for (const int64_t rows : {2 * kRowsAPass + 1, 3 * kRowsAPass - 3, kFewRows}) counts.push_back(rows);
  return counts;
}

// Where libtorch runs neither its AVX2 nor its AVX-512 kernels, every product goes to at::linear,
// whose bits are MKL's to choose.
bool kernel_in_use() { return at::get_cpu_capability() != "DEFAULT"; }

TEST(FewRowLinear, EqualsLinearWithinFloat32RoundingForEveryRowCount) {
  at::manual_seed(0);
  for (const Shape& shape : kShapes) {
    const at::Tensor weight = at::randn({shape.out, shape.in});
    std::vector<int64_t> counts = row_counts();
    counts.push_back(kFewRows + 1);  // at::linear's
    for (const int64_t rows : counts) {
      const at::Tensor x = at::randn({1, rows, shape.in});
      const at::Tensor ours = few_row_linear(x, weight), reference = at::linear(x.to(at::kDouble), weight.to(at::kDouble));
      ASSERT_EQ(ours.sizes(), (std::vector<int64_t>{1, rows, shape.out}));
      const double tolerance = 1e-5 * std::sqrt(static_cast<double>(shape.in));
      EXPECT_LT((ours.to(at::kDouble) - reference).abs().max().item<double>(), tolerance)
          << "in " << shape.in << ", out " << shape.out << ", rows " << rows;
    }
  }
}

// A verification pass of K+1 positions gives each position what it gets among any others, up to
// kFewRows: the same bits, so that the batch a row is decoded in cannot move its tokens.
TEST(FewRowLinear, ARowsResultIsTheSameWhateverRowsComeWithIt) {
  if (!kernel_in_use()) GTEST_SKIP() << "ATEN_CPU_CAPABILITY=default: at::linear computes every product";
  at::manual_seed(1);
  const at::Tensor weight = at::randn({1536, 576});
  const at::Tensor x = at::randn({kFewRows, 576});
  const at::Tensor all = few_row_linear(x, weight);
  for (const int64_t rows : row_counts()) {
    for (int64_t first = 0; rows < kFewRows && first + rows <= kFewRows; first += rows) {
      EXPECT_TRUE(at::equal(few_row_linear(x.narrow(0, first, rows), weight), all.narrow(0, first, rows)))
          << rows << " rows from row " << first;
    }
  }
}

// The weight's rows shared among threads: every result the same bits as on one thread.
TEST(FewRowLinear, TheNumberOfThreadsChangesNoBit) {
  if (!kernel_in_use()) GTEST_SKIP() << "ATEN_CPU_CAPABILITY=default: at::linear computes every product";
  at::manual_seed(2);
  const int threads = at::get_num_threads();
  for (const Shape& shape : {Shape{576, 1536}, Shape{1536, 577}, Shape{64, 259}}) {
    const at::Tensor weight = at::randn({shape.out, shape.in});
    for (const int64_t rows : row_counts()) {
      const at::Tensor x = at::randn({rows, shape.in});
      at::set_num_threads(1);
      const at::Tensor alone = few_row_linear(x, weight);
      for (const int shared : {2, 3}) {
        at::set_num_threads(shared);
        EXPECT_TRUE(at::equal(few_row_linear(x, weight), alone))
            << shared << " threads, in " << shape.in << ", out " << shape.out << ", rows " << rows;
      }
    }
  }
  at::set_num_threads(threads);
}

TEST(FewRowLinear, OtherDtypesAndGradientsGoToLinear) {
  const at::Tensor weight = at::randn({7, 5}, at::kDouble), x = at::randn({3, 5}, at::kDouble);
  EXPECT_TRUE(at::equal(few_row_linear(x, weight), at::linear(x, weight)));
  const at::Tensor trained = at::randn({7, 5}).requires_grad_(true);
  const at::Tensor y = few_row_linear(at::randn({3, 5}), trained);
  EXPECT_TRUE(y.requires_grad());
}

}  // namespace
}  // namespace specgate
