#include "conformance/collect/dialect.h"

#include "impl/common/error.h"

namespace specgate::cli {

std::unique_ptr<Dialect> dialect_from_name(const std::string& name) {
  if (name == "openai") return make_openai_dialect();
  if (name == "vllm") return make_vllm_dialect();
  if (name == "sglang") return make_sglang_dialect();
  if (name == "llamacpp") return make_llamacpp_dialect();
  if (name == "tgi") return make_tgi_dialect();
  throw InputError("--api: unknown API '" + name + "' (expected openai, vllm, sglang, llamacpp or tgi)");
}

}  // namespace specgate::cli
