#include "conformance/collect/server_check.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"

namespace specgate::cli {
namespace {

// The ids and owners of /v1/models' {"data": [{"id": ..., "owned_by": ...}, ...]}; none when the
// body is not that.
ServerListing listed_models(const std::string& body, const std::string& model) {
  const nlohmann::json listing = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  ServerListing out;
  if (!listing.is_object() || !listing.contains("data") || !listing["data"].is_array()) return out;
  for (const nlohmann::json& entry : listing["data"]) {
    if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_string()) continue;
    out.models.push_back(entry["id"].get<std::string>());
    const bool owned = entry.contains("owned_by") && entry["owned_by"].is_string();
    if (owned && (!out.server || out.models.back() == model)) out.server = entry["owned_by"].get<std::string>().substr(0, 200);
  }
  return out;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "'" : ", '") + name.substr(0, 200) + "'";
  return out;
}

}  // namespace

ServerListing check_server(const Endpoint& endpoint, const Dialect& dialect, const std::string& model,
                                      const HttpLimits& http) {
  HttpClient client(endpoint, {.timeout_seconds = std::min(http.timeout_seconds, 10.0), .max_response_bytes = int64_t{1} << 20});
  const std::string url = endpoint_url(endpoint);
  HttpResponse models = client.get("/v1/models");
  if (models.status == 0)
    throw InputError("--endpoint " + url + ": no server answers (" + models.error + ")");
  if (models.status != 200) {
    const HttpResponse health = client.get("/health");
    if (health.status == 0) throw InputError("--endpoint " + url + ": no server answers (" + health.error + ")");
    if (health.status >= 500 && health.status != 501)  // 501: no GET at all
      throw InputError("--endpoint " + url + ": the server is not ready (GET /health answered " + std::to_string(health.status) + ")");
    return {};
  }
  ServerListing listed = listed_models(models.body, model);
  if (dialect.routes_by_model() && !model.empty() && !listed.models.empty() &&
      std::find(listed.models.begin(), listed.models.end(), model) == listed.models.end())
    throw InputError("--model '" + model.substr(0, 200) + "': the server at " + url + " serves " +
                     quoted_list(listed.models) + " (GET /v1/models)");
  return listed;
}

}  // namespace specgate::cli
