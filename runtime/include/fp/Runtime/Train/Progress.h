//===- Progress.h - Training progress on the terminal -----------*- C++ -*-===//
//
// Shows how a run is going: on a terminal, one progress-bar line redrawn in
// place (step/total, loss, steps per second, ETA); otherwise, plain log lines
// every --log-every steps, suited to files and CI logs. Notes (validation
// results, checkpoints) are printed as whole lines in both modes.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TRAIN_PROGRESS_H
#define FP_RUNTIME_TRAIN_PROGRESS_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace fp::rt {

/// How progress is shown.
enum class ProgressMode {
  /// Bar when the stream is a terminal, Lines otherwise.
  Auto,
  Bar,
  Lines,
  Quiet,
};

/// auto | bar | lines | none
std::string progressModeName(ProgressMode mode);
std::optional<ProgressMode> parseProgressMode(const std::string &name);

/// The training values of one step, as shown.
struct ProgressSnapshot {
  int64_t step = 0;
  int64_t totalSteps = 0;
  double loss = 0;
  double lr = 0;
  double gradNorm = 0;
  double itersMean = 0;
  int64_t itersMax = 0;
  double tokensPerSecond = 0;
};

/// "MM:SS", or "H:MM:SS" from an hour on; "--:--" when not finite or
/// negative.
std::string formatDuration(double seconds);

/// The bar line, at most `width` columns:
/// " 120/1000 [####      ]  12% loss 2.3456 | 12.3 steps/s | ETA 01:12".
std::string formatBarLine(const ProgressSnapshot &snapshot,
                          double stepsPerSecond, double etaSeconds, int width);

/// One log line: "step 120/1000 loss 2.3456 lr 1.00e-04 grad 0.512
/// [fp 4.2/7] 310 tok/s 12.3 steps/s ETA 01:12" (fp only with a fixed point).
std::string formatLogLine(const ProgressSnapshot &snapshot,
                          double stepsPerSecond, double etaSeconds);

/// Draws progress on `out` (stderr by default); the rate and ETA are measured
/// from construction.
class ProgressReporter {
public:
  ProgressReporter(ProgressMode mode, std::FILE *out, int64_t startStep,
                   int64_t totalSteps);
  ProgressReporter(const ProgressReporter &) = delete;
  ProgressReporter &operator=(const ProgressReporter &) = delete;
  ~ProgressReporter();

  /// The mode in effect (Auto resolved).
  ProgressMode mode() const { return activeMode; }

  /// Reports a finished step. In Lines mode only `logStep` steps print.
  void update(const ProgressSnapshot &snapshot, bool logStep);
  /// Prints `line` as a line of its own without breaking the bar.
  void note(const std::string &line);
  /// Ends the bar line, if one is drawn.
  void finish();

private:
  double stepsPerSecond(int64_t step) const;
  int terminalWidth() const;

  ProgressMode activeMode;
  std::FILE *out;
  int64_t startStep;
  int64_t totalSteps;
  std::chrono::steady_clock::time_point start;
  std::chrono::steady_clock::time_point lastDraw;
  std::string lastBar;
  bool barShown = false;
};

} // namespace fp::rt

#endif // FP_RUNTIME_TRAIN_PROGRESS_H
