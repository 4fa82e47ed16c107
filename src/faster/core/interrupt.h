// Ctrl-C (SIGINT) and SIGTERM during long work: the first sets a flag the work reads between
// steps, so it stops where its files are whole and says where it stopped; a second ends the
// process at once (the signal's default action), for work that does not get to its next check.
#pragma once

#include <signal.h>

#include <string>

#include "faster/core/error.h"

namespace faster {

class InterruptScope {
 public:
  // Installs the handlers (one scope at a time); the destructor puts the previous ones back.
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // The signal received since the scope began (SIGINT or SIGTERM), 0 for none.
  static int received();

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Work stopped by a signal that an InterruptScope caught: the process exits 128 + signal(), as
// the shell reports a process the signal ended.
class Interrupted : public Error {
 public:
  Interrupted(int signal, const std::string& what, std::string hint = {})
      : Error(what, std::move(hint)), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

// "SIGINT" or "SIGTERM" (or "signal N").
std::string signal_name(int signal);

// Where work checks between its items: throws Interrupted ("interrupted (SIGINT) " + where())
// once an InterruptScope has caught a signal; `where` is called only then.
template <typename Where>
void stop_if_interrupted(Where&& where, const std::string& hint) {
  if (const int signal = InterruptScope::received())
    throw Interrupted(signal, "interrupted (" + signal_name(signal) + ") " + where(), hint);
}

}  // namespace faster
