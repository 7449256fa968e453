//===- Interrupt.h - Stop requests by SIGINT and SIGTERM --------*- C++ -*-===//
//
// A long run ends at a safe point when asked to stop: the first SIGINT or
// SIGTERM is recorded, and the work checks for it between training steps,
// between evaluation chunks and between the phases of building a run. A
// second signal exits at once, with 130; a file being replaced atomically at
// that moment keeps its previous content, and the temporary that was to
// replace it is removed first.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TRAIN_INTERRUPT_H
#define FP_RUNTIME_TRAIN_INTERRUPT_H

#include <stdexcept>

namespace fp::rt {

/// Installs the handlers of SIGINT and SIGTERM for the rest of the process
/// (calling it again does nothing). `program` prefixes the one line printed
/// when a second signal exits.
void installStopHandlers(const char *program);

/// The signal that asked the process to stop, 0 when none.
int stopRequested();

/// Thrown where work notices a stop request between two of its parts.
class StopRequested : public std::runtime_error {
public:
  StopRequested() : std::runtime_error("interrupted") {}
};

/// Throws StopRequested when a stop was requested.
void throwIfStopRequested();

/// Names the temporary file of an atomic write in progress, which a second
/// signal removes before it exits; clear it once the write has ended (renamed
/// or removed). Paths longer than PATH_MAX are not recorded.
void setWriteInFlight(const char *temporary);
void clearWriteInFlight();

} // namespace fp::rt

#endif // FP_RUNTIME_TRAIN_INTERRUPT_H
