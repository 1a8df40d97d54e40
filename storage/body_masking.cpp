#include "storage/body_masking.h"

#include "base/json_depth.h"

namespace webhooker {

MaskedBody maskJsonBody(std::string_view body, const std::vector<JsonPointer>& pointers) {
  MaskedBody out;
  // Too deep to dump back safely: left as it is, like any body that is not JSON.
  if (!jsonDepthWithin(body)) return out;
  // ordered_json keeps the sender's member order; invalid UTF-8 fails the
  // parse, so such a body counts as not JSON.
  auto doc = nlohmann::ordered_json::parse(body, nullptr, false);
  if (doc.is_discarded()) return out;
  out.json = true;
  bool replaced = false;
  for (const JsonPointer& p : pointers)
    replaced = replaceAtPointer(doc, p, kMaskedValue) || replaced;
  if (!replaced) return out;
  out.body = doc.dump();
  // Masking a body masked before (the pointer list changed) may change nothing.
  out.changed = out.body != body;
  if (!out.changed) out.body.clear();
  return out;
}

}  // namespace webhooker
