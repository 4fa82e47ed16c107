// InterruptScope: sigaction handlers that set a flag, or on a second signal take the default
// action.
#include "faster/core/interrupt.h"

#include <unistd.h>

namespace faster {
namespace {

volatile sig_atomic_t g_received = 0;

void on_signal(int signal) {
  if (g_received != 0) {  // the second: stop at once
    ::signal(signal, SIG_DFL);
    ::raise(signal);
    return;
  }
  g_received = signal;
  static const char note[] = "\nfaster: stopping after the current step (again to stop at once)\n";
  const ssize_t unused = ::write(STDERR_FILENO, note, sizeof note - 1);
  (void)unused;
}

}  // namespace

InterruptScope::InterruptScope() {
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &old_int_);
  sigaction(SIGTERM, &action, &old_term_);
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

int InterruptScope::received() {
  return g_received;
}

std::string signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal);
}

}  // namespace faster
