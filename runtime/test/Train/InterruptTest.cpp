//===- InterruptTest.cpp - Stop requests by SIGINT and SIGTERM --*- C++ -*-===//
//
// In a forked child (a second signal ends the process): the first signal is
// recorded and turns into StopRequested where the work checks; the second
// exits at once with 130, removing the temporary of a write in flight and
// leaving the file it was to replace as it was.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/Interrupt.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include <sys/wait.h>
#include <unistd.h>

using namespace fp::rt;
namespace fs = std::filesystem;

namespace {

TEST(Interrupt, FirstSignalIsRecordedSecondExitsAtOnce) {
  const fs::path dir = fs::temp_directory_path() /
                       ("fp-interrupt-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path target = dir / "checkpoint.pt", temporary = dir / "c.tmp";
  std::ofstream(target) << "previous";
  std::ofstream(temporary) << "half";

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only async-signal-safe work and _exit from here on, as after fork.
    installStopHandlers("fp-test");
    if (stopRequested() != 0)
      ::_exit(3);
    ::raise(SIGTERM);
    if (stopRequested() != SIGTERM)
      ::_exit(4);
    bool thrown = false;
    try {
      throwIfStopRequested();
    } catch (const StopRequested &) {
      thrown = true;
    }
    if (!thrown)
      ::_exit(5);
    setWriteInFlight(temporary.c_str());
    ::raise(SIGINT); // exits with 130
    ::_exit(6);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_FALSE(fs::exists(temporary));
  std::ifstream in(target);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "previous");
  fs::remove_all(dir);
}

} // namespace
