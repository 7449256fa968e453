//===- Interrupt.cpp - Stop requests by SIGINT and SIGTERM ------*- C++ -*-===//
//
// The handler only stores the signal, or, for a second one, removes the
// temporary of a write in flight, writes one line and calls _exit: all
// async-signal-safe.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/Interrupt.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstring>

#include <unistd.h>

namespace fp::rt {

namespace {

std::atomic<int> requested{0};
std::atomic<bool> installed{false};
std::atomic<bool> writeInFlight{false};
char inFlightPath[PATH_MAX];
char exitLine[256];
size_t exitLineSize = 0;

extern "C" void onStopSignal(int signal) {
  int expected = 0;
  if (requested.compare_exchange_strong(expected, signal))
    return;
  if (writeInFlight.load())
    ::unlink(inFlightPath);
  ssize_t ignored = ::write(STDERR_FILENO, exitLine, exitLineSize);
  (void)ignored;
  ::_exit(130);
}

} // namespace

void installStopHandlers(const char *program) {
  if (installed.exchange(true))
    return;
  const char *rest = ": interrupted again; exiting at once (the files of the "
                     "run keep their last complete versions)\n";
  size_t programSize = std::min(std::strlen(program), size_t(64));
  std::memcpy(exitLine, program, programSize);
  std::memcpy(exitLine + programSize, rest, std::strlen(rest));
  exitLineSize = programSize + std::strlen(rest);

  struct sigaction action = {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  // System calls interrupted by the first signal resume: the work notices
  // the request at its next check.
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int stopRequested() { return requested.load(); }

void throwIfStopRequested() {
  if (stopRequested() != 0)
    throw StopRequested();
}

void setWriteInFlight(const char *temporary) {
  size_t size = std::strlen(temporary);
  if (size >= sizeof inFlightPath)
    return;
  writeInFlight.store(false);
  std::memcpy(inFlightPath, temporary, size + 1);
  writeInFlight.store(true);
}

void clearWriteInFlight() { writeInFlight.store(false); }

} // namespace fp::rt
