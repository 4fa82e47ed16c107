// InterruptScope: sigaction handlers that set a flag, or on a second signal take the default
// action.
#include "faster/core/interrupt.h"

#include <unistd.h>

#include <atomic>

namespace faster {
namespace {

// Read by the working thread, set by the handler on whichever thread took the signal.
std::atomic<int> g_received{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

void on_signal(int signal) {
  if (g_received.load() != 0) {  // the second: stop at once
    ::signal(signal, SIG_DFL);
    ::raise(signal);
    return;
  }
  g_received.store(signal);
  static const char note[] = "\nfaster: stopping after the current step (again to stop at once)\n";
  const ssize_t unused = ::write(STDERR_FILENO, note, sizeof note - 1);
  (void)unused;
}

}  // namespace

InterruptScope::InterruptScope() {
  g_received.store(0);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  // A signal the parent set to be ignored (nohup, trap '' INT) stays ignored.
  for (auto [signal, old] : {std::pair{SIGINT, &old_int_}, std::pair{SIGTERM, &old_term_}}) {
    sigaction(signal, nullptr, old);
    if (old->sa_handler != SIG_IGN) sigaction(signal, &action, nullptr);
  }
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

int InterruptScope::received() {
  return g_received.load();
}

std::string signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal);
}

}  // namespace faster
