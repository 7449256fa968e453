//===- Launcher.h - fp-train --nproc-per-node -------------------*- C++ -*-===//
//
// The local launcher: starts N copies of fp-train on this machine with the
// environment torchrun would give them (RANK, LOCAL_RANK, WORLD_SIZE,
// MASTER_ADDR=127.0.0.1, a free MASTER_PORT) and watches them. When one
// exits with an error or is killed, the launcher names its rank, stops the
// others (SIGTERM, then SIGKILL after a grace period) and exits with that
// worker's status; a SIGINT or SIGTERM to the launcher goes to every
// worker, which checkpoint and exit 130.
//
//===----------------------------------------------------------------------===//

#ifndef FP_TRAIN_LAUNCHER_H
#define FP_TRAIN_LAUNCHER_H

#include <cstdint>
#include <string>
#include <vector>

namespace fp::train {

/// The environment variable that marks a process the launcher started (so
/// that it trains rather than launching again).
inline constexpr const char *kLaunchedVariable = "FP_TRAIN_LAUNCHED";

/// Runs `processes` workers of this executable with `args` and returns the
/// exit status the launcher should have. `graceSeconds`: how long stopped
/// workers get before SIGKILL.
int launchWorkers(const std::vector<std::string> &args, int64_t processes,
                  int64_t graceSeconds);

} // namespace fp::train

#endif // FP_TRAIN_LAUNCHER_H
