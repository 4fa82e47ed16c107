// Child processes (the DDP launcher's ranks, the bench's runs).
#pragma once

#include <sys/wait.h>

namespace faster {

// A waitpid status as a shell would report it: the exit code, or 128 + the signal that killed it.
inline int wait_exit_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace faster
