#include "storage/body_masking.h"

#include "base/json_text.h"

namespace webhooker {

MaskedBody maskJsonBody(std::string_view body, const std::vector<JsonPointer>& pointers) {
  MaskedBody out;
  // Member order is kept; a body that is not exactly JSON (invalid UTF-8,
  // a NUL byte) is left as it is, every byte of it.
  auto doc = parseJsonText(body);
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
