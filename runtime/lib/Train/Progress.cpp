//===- Progress.cpp - Training progress on the terminal ---------*- C++ -*-===//
//
// The progress bar redraws one line with a carriage return and "erase to end
// of line", at most ten times a second; any other output first clears the
// bar and then redraws it below, so notes and the bar never interleave.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/Progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <sys/ioctl.h>
#include <unistd.h>

namespace fp::rt {

std::string progressModeName(ProgressMode mode) {
  switch (mode) {
  case ProgressMode::Auto:
    return "auto";
  case ProgressMode::Bar:
    return "bar";
  case ProgressMode::Lines:
    return "lines";
  case ProgressMode::Quiet:
    return "none";
  }
  return "auto";
}

std::optional<ProgressMode> parseProgressMode(const std::string &name) {
  for (ProgressMode mode : {ProgressMode::Auto, ProgressMode::Bar,
                            ProgressMode::Lines, ProgressMode::Quiet})
    if (progressModeName(mode) == name)
      return mode;
  return std::nullopt;
}

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "--:--";
  auto total = static_cast<int64_t>(std::llround(seconds));
  int64_t hours = total / 3600, minutes = total / 60 % 60, secs = total % 60;
  if (hours > 0)
    return fmt::format("{}:{:02}:{:02}", hours, minutes, secs);
  return fmt::format("{:02}:{:02}", minutes, secs);
}

namespace {

std::string formatRate(double stepsPerSecond) {
  if (!std::isfinite(stepsPerSecond) || stepsPerSecond <= 0)
    return "-- steps/s";
  if (stepsPerSecond >= 1)
    return fmt::format("{:.1f} steps/s", stepsPerSecond);
  return fmt::format("{:.1f} s/step", 1.0 / stepsPerSecond);
}

} // namespace

std::string formatBarLine(const ProgressSnapshot &snapshot,
                          double stepsPerSecond, double etaSeconds, int width) {
  int digits = static_cast<int>(std::to_string(snapshot.totalSteps).size());
  std::string counter =
      fmt::format("{:>{}}/{}", snapshot.step, digits, snapshot.totalSteps);
  double fraction =
      snapshot.totalSteps > 0
          ? std::clamp(static_cast<double>(snapshot.step) /
                           static_cast<double>(snapshot.totalSteps),
                       0.0, 1.0)
          : 0.0;
  std::string tail = fmt::format(
      "{:3.0f}% loss {:.4f} | {} | ETA {}", 100.0 * fraction, snapshot.loss,
      formatRate(stepsPerSecond), formatDuration(etaSeconds));
  // The bar takes what is left of the width, between 10 and 40 columns; it
  // is dropped entirely on very narrow terminals.
  int room = width - static_cast<int>(counter.size() + tail.size()) - 4;
  int barWidth = std::min(room, 40);
  if (barWidth < 10)
    return (counter + " " + tail).substr(0, std::max(width - 1, 1));
  int filled = static_cast<int>(std::floor(fraction * barWidth));
  return fmt::format("{} [{}{}] {}", counter, std::string(filled, '#'),
                     std::string(barWidth - filled, ' '), tail);
}

std::string formatLogLine(const ProgressSnapshot &snapshot,
                          double stepsPerSecond, double etaSeconds) {
  std::string line = fmt::format("step {}/{} loss {:.4f} lr {:.2e} grad {:.3g}",
                                 snapshot.step, snapshot.totalSteps,
                                 snapshot.loss, snapshot.lr, snapshot.gradNorm);
  if (snapshot.itersMax > 0)
    line += fmt::format(" fp {:.1f}/{}", snapshot.itersMean, snapshot.itersMax);
  line += fmt::format(" {:.0f} tok/s {} ETA {}", snapshot.tokensPerSecond,
                      formatRate(stepsPerSecond), formatDuration(etaSeconds));
  return line;
}

//===----------------------------------------------------------------------===//
// ProgressReporter
//===----------------------------------------------------------------------===//

ProgressReporter::ProgressReporter(ProgressMode mode, std::FILE *out,
                                   int64_t startStep, int64_t totalSteps)
    : activeMode(mode), out(out), startStep(startStep), totalSteps(totalSteps),
      start(std::chrono::steady_clock::now()),
      lastDraw(start - std::chrono::seconds(1)) {
  if (activeMode == ProgressMode::Auto)
    activeMode = isatty(fileno(out)) ? ProgressMode::Bar : ProgressMode::Lines;
}

ProgressReporter::~ProgressReporter() { finish(); }

double ProgressReporter::stepsPerSecond(int64_t step) const {
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (seconds <= 0 || step <= startStep)
    return 0;
  return static_cast<double>(step - startStep) / seconds;
}

int ProgressReporter::terminalWidth() const {
  winsize size{};
  if (ioctl(fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  return 80;
}

void ProgressReporter::update(const ProgressSnapshot &snapshot, bool logStep) {
  if (activeMode == ProgressMode::Quiet)
    return;
  double rate = stepsPerSecond(snapshot.step);
  double eta = rate > 0 ? static_cast<double>(totalSteps - snapshot.step) / rate
                        : std::nan("");
  if (activeMode == ProgressMode::Lines) {
    if (logStep) {
      fmt::print(out, "{}\n", formatLogLine(snapshot, rate, eta));
      std::fflush(out);
    }
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (snapshot.step < totalSteps &&
      now - lastDraw < std::chrono::milliseconds(100))
    return;
  lastDraw = now;
  lastBar = formatBarLine(snapshot, rate, eta, terminalWidth());
  fmt::print(out, "\r{}\x1b[K", lastBar);
  std::fflush(out);
  barShown = true;
}

void ProgressReporter::note(const std::string &line) {
  if (activeMode == ProgressMode::Quiet)
    return;
  if (barShown)
    fmt::print(out, "\r\x1b[K{}\n{}", line, lastBar);
  else
    fmt::print(out, "{}\n", line);
  std::fflush(out);
}

void ProgressReporter::finish() {
  if (barShown) {
    fmt::print(out, "\n");
    std::fflush(out);
    barShown = false;
  }
}

} // namespace fp::rt
