#include "server/access.h"

namespace webhooker::server {

std::optional<Scope> parseScope(std::string_view word) {
  if (word == "read") return Scope::kRead;
  if (word == "operate") return Scope::kOperate;
  if (word == "manage") return Scope::kManage;
  return std::nullopt;
}

std::string_view scopeWord(Scope scope) {
  switch (scope) {
    case Scope::kRead: return "read";
    case Scope::kOperate: return "operate";
    case Scope::kManage: return "manage";
  }
  return "read";
}

std::string_view Caller::actor() const {
  switch (kind) {
    case Kind::kAdmin: return "admin";
    case Kind::kToken: return "token";
    case Kind::kPortal: return "portal";
    case Kind::kNone: break;
  }
  return "none";
}

}  // namespace webhooker::server
