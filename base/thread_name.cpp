#include "base/thread_name.h"

#include <pthread.h>

#include <cstring>
#include <string>

namespace webhooker {

void nameThisThread(const char* name) {
  // pthread_setname_np refuses a name over the limit rather than cutting it.
  const std::string kept(name, strnlen(name, 15));
  pthread_setname_np(pthread_self(), kept.c_str());
}

}  // namespace webhooker
