//===- Launcher.cpp - fp-train --nproc-per-node ---------------------------===//
//
// Part of fpc. See Launcher.h.
//
//===----------------------------------------------------------------------===//

#include "Launcher.h"

#include "fp/Runtime/Train/Interrupt.h"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace {

/// A TCP port on 127.0.0.1 that was free a moment ago.
int freePort() {
  int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  if (sock < 0)
    throw std::runtime_error(fmt::format("cannot open a socket to find a free "
                                         "port: {}",
                                         std::strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (::bind(sock, reinterpret_cast<sockaddr *>(&address), sizeof(address)) !=
          0 ||
      ::getsockname(sock, reinterpret_cast<sockaddr *>(&address), &length) !=
          0) {
    int error = errno;
    ::close(sock);
    throw std::runtime_error(
        fmt::format("cannot find a free port: {}", std::strerror(error)));
  }
  ::close(sock);
  return ntohs(address.sin_port);
}

std::string describeStatus(int status) {
  if (WIFEXITED(status))
    return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return "stopped";
}

} // namespace

int fp::train::launchWorkers(const std::vector<std::string> &args,
                             int64_t processes, int64_t graceSeconds) {
  const int port = freePort();
  std::vector<pid_t> workers(static_cast<size_t>(processes), -1);
  for (int64_t rank = 0; rank < processes; ++rank) {
    pid_t pid = ::fork();
    if (pid < 0)
      throw std::runtime_error(fmt::format("cannot start worker {}: {}", rank,
                                           std::strerror(errno)));
    if (pid == 0) {
      // Signals reach the workers through the launcher alone, once each
      // (a terminal's SIGINT would otherwise reach them twice, and a second
      // signal stops a worker at once); a worker whose launcher dies is
      // stopped too.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(processes).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv(kLaunchedVariable, "1", 1);
      std::vector<char *> argv;
      std::string self = "/proc/self/exe";
      argv.push_back(const_cast<char *>("fp-train"));
      for (const std::string &arg : args)
        argv.push_back(const_cast<char *>(arg.c_str()));
      argv.push_back(nullptr);
      ::execv(self.c_str(), argv.data());
      fmt::print(stderr, "fp-train: cannot start worker {}: {}\n", rank,
                 std::strerror(errno));
      std::_Exit(127);
    }
    workers[static_cast<size_t>(rank)] = pid;
  }
  fmt::print(stderr,
             "fp-train: started {} workers on 127.0.0.1:{} (ranks 0-{}); rank "
             "0 reports\n",
             processes, port, processes - 1);

  int result = 0;
  int64_t running = processes;
  bool stopping = false, forwarded = false;
  auto deadline = std::chrono::steady_clock::time_point::max();
  auto signalAll = [&](int signal) {
    for (pid_t pid : workers)
      if (pid > 0) {
        ::kill(pid, signal);
        // A stopped worker (SIGSTOP, a debugger) handles it once resumed.
        if (signal == SIGTERM)
          ::kill(pid, SIGCONT);
      }
  };
  while (running > 0) {
    // A stop request to the launcher goes to every worker, once.
    if (!forwarded && fp::rt::stopRequested() != 0) {
      signalAll(SIGTERM);
      forwarded = true;
    }
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      int64_t rank = -1;
      for (size_t i = 0; i < workers.size(); ++i)
        if (workers[i] == pid) {
          rank = static_cast<int64_t>(i);
          workers[i] = -1;
        }
      if (rank < 0)
        continue;
      --running;
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && !stopping) {
        result = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        if (result == 130 && forwarded) {
          // Interrupted as asked: the others finish their checkpoint too.
        } else {
          fmt::print(stderr,
                     "fp-train: worker rank {} (pid {}) {}; stopping the "
                     "other {}\n",
                     rank, pid, describeStatus(status), running);
          signalAll(SIGTERM);
        }
        stopping = true;
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::seconds(graceSeconds);
      }
      continue;
    }
    if (pid < 0 && errno != EINTR)
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      fmt::print(stderr,
                 "fp-train: {} worker(s) did not stop within {} s; killing "
                 "them\n",
                 running, graceSeconds);
      signalAll(SIGKILL);
      deadline = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return result;
}
