// SPDX-License-Identifier: BSD-3-Clause
// Launch processes (see launch_process.h): forking and stopping them, the loop they serve launches
// in, and the signal handler that tells the caller which core crashed.
#include "launch_process.h"

#include <dlfcn.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "gm_arena.h"

namespace twin::host {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
constexpr size_t kIdleProcesses = 4;  // kept for the next launches (one per concurrent caller)
constexpr int kPollMs = 50;           // how often a waiting caller looks at Ctrl-C

struct Request {
    SharedLaunch *shared;
    uint32_t path_bytes;  // followed by the kernel object's path
};

// All n bytes through `io` (a send or recv on fd), retried where a signal cut it short; false when
// the other end is gone.
template <typename Io>
bool Transfer(int fd, char *p, size_t n, Io io)
{
    while (n > 0) {
        const ssize_t k = io(fd, p, n);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            return false;
        }
        p += k;
        n -= size_t(k);
    }
    return true;
}

bool WriteAll(int fd, const void *data, size_t n)
{
    return Transfer(fd, const_cast<char *>(static_cast<const char *>(data)), n,
                    [](int f, char *p, size_t k) { return send(f, p, k, MSG_NOSIGNAL); });
}

bool ReadAll(int fd, void *data, size_t n)
{
    return Transfer(fd, static_cast<char *>(data), n, [](int f, char *p, size_t k) { return recv(f, p, k, 0); });
}

// ---- in the launch process ----

std::atomic<CrashReport *> g_report{nullptr};
std::atomic<TwinCurrentCoreFn> g_current_core{nullptr};

// Async-signal-safe: records the first fatal signal of the launch, then dies of it.
void OnFatalSignal(int sig, siginfo_t *info, void *)
{
    CrashReport *report = g_report.load();
    int none = 0;
    if (report != nullptr && report->signal.compare_exchange_strong(none, sig)) {
        const TwinCurrentCoreFn core = g_current_core.load();
        report->core = core != nullptr ? core() : -1;
        report->code = info->si_code;
        report->address = reinterpret_cast<uintptr_t>(info->si_addr);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

// A kernel's printf goes where the caller's stdout and stderr point at this launch. The caller may have
// redirected them since this process was forked (pytest's capfd, a log file): then the same file is
// opened again through /proc, appending; while they are the same file, the shared descriptor (and its
// offset) is kept.
void FollowCallerOutput(pid_t caller)
{
    for (int fd : {1, 2}) {
        char path[64];
        std::snprintf(path, sizeof path, "/proc/%d/fd/%d", int(caller), fd);
        struct stat theirs {}, ours {};
        if (stat(path, &theirs) != 0 ||
            (fstat(fd, &ours) == 0 && ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino)) {
            continue;
        }
        const int f = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (f >= 0) {
            dup2(f, fd);
            close(f);
        }
    }
}

void CloseAllBut(int keep)
{
    if ((keep == 3 || close_range(3, unsigned(keep) - 1, 0) == 0) && close_range(unsigned(keep) + 1, ~0u, 0) == 0) {
        return;
    }
    const long top = std::min(sysconf(_SC_OPEN_MAX), 65536L);
    for (int fd = 3; fd < top; ++fd) {
        if (fd != keep) {
            close(fd);
        }
    }
}

struct KernelObject {
    TwinLaunchFn launch = nullptr;
    TwinCurrentCoreFn current_core = nullptr;
};

[[noreturn]] void Serve(int sock)
{
    CloseAllBut(sock);             // the caller's files are not this process's to keep open
    prctl(PR_SET_NAME, "twin-launch");  // how ps and top name it
    signal(SIGINT, SIG_IGN);       // Ctrl-C is the caller's: it stops this process
    struct sigaction action {};
    action.sa_sigaction = OnFatalSignal;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    for (int sig : kFatalSignals) {
        sigaction(sig, &action, nullptr);
    }
    // Leaves when the caller is gone, even in the middle of a launch that never ends.
    std::thread([sock] {
        pollfd hangup{sock, POLLRDHUP, 0};
        while (poll(&hangup, 1, -1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }).detach();
    std::map<std::string, KernelObject> objects;
    for (;;) {
        Request request;
        if (!ReadAll(sock, &request, sizeof request)) {
            _exit(0);
        }
        std::string path(request.path_bytes, '\0');
        if (!ReadAll(sock, path.data(), path.size())) {
            _exit(0);
        }
        TwinLaunchResult &result = request.shared->result;
        auto found = objects.find(path);
        if (found == objects.end()) {
            KernelObject object;
            if (void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
                object.launch = reinterpret_cast<TwinLaunchFn>(dlsym(handle, "twin_launch"));
                object.current_core = reinterpret_cast<TwinCurrentCoreFn>(dlsym(handle, "twin_current_core"));
            }
            if (object.launch == nullptr) {
                result.status = kNotLoaded;
                const char *why = dlerror();
                std::snprintf(result.error, sizeof result.error, "%s", why != nullptr ? why : "no twin_launch in it");
                const char done = 1;
                WriteAll(sock, &done, 1);
                continue;
            }
            if (object.current_core != nullptr) {
                object.current_core();  // makes this thread's copy of the object's TLS before a handler reads it
            }
            found = objects.emplace(path, object).first;
        }
        FollowCallerOutput(getppid());
        g_current_core = found->second.current_core;
        g_report = &request.shared->crash;
        found->second.launch(&request.shared->args, &result);
        g_report = nullptr;
        std::fflush(stdout);
        std::fflush(stderr);
        const char done = 1;
        if (!WriteAll(sock, &done, 1)) {
            _exit(0);
        }
    }
}

// ---- in the caller ----

struct Helper {
    pid_t pid = -1;
    int sock = -1;
};

int Reap(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

void Stop(const Helper &h)
{
    kill(h.pid, SIGKILL);
    Reap(h.pid);
    close(h.sock);
}

Helper Spawn()
{
    ArenaReserve();  // before the fork, so that the process shares it
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        throw std::runtime_error(std::string("the twin could not make a socket for its launch process (") +
                                 std::strerror(errno) + ")");
    }
    std::fflush(nullptr);  // else the launch process would write the caller's pending output again
    t_forking_launch_process = true;
    const pid_t pid = fork();
    if (pid == 0) {
        Serve(fds[1]);
    }
    const int error = errno;
    t_forking_launch_process = false;
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        throw std::runtime_error(std::string("the twin could not fork its launch process (") + std::strerror(error) +
                                 ")");
    }
    return {pid, fds[0]};
}

std::mutex g_idle_mutex;
std::vector<Helper> g_idle;

// The launch processes of a forked caller are its parent's: the child forgets them.
void ForgetHelpersInChild()
{
    if (!t_forking_launch_process) {
        for (const Helper &h : g_idle) {
            close(h.sock);
        }
        g_idle.clear();
        g_idle_mutex.unlock();
    }
}
void LockHelpers()
{
    if (!t_forking_launch_process) {
        g_idle_mutex.lock();
    }
}
void UnlockHelpers()
{
    if (!t_forking_launch_process) {
        g_idle_mutex.unlock();
    }
}
const int g_helpers_fork_safe = pthread_atfork(LockHelpers, UnlockHelpers, ForgetHelpersInChild);

Helper TakeHelper()
{
    {
        std::lock_guard<std::mutex> lock(g_idle_mutex);
        while (!g_idle.empty()) {
            const Helper h = g_idle.back();
            g_idle.pop_back();
            if (waitpid(h.pid, nullptr, WNOHANG) == 0) {
                return h;
            }
            close(h.sock);  // it ended between launches (it was killed from outside)
        }
    }
    return Spawn();
}

void GiveBack(const Helper &h)
{
    {
        std::lock_guard<std::mutex> lock(g_idle_mutex);
        if (g_idle.size() < kIdleProcesses) {
            g_idle.push_back(h);
            return;
        }
    }
    Stop(h);
}

bool Send(const Helper &h, SharedLaunch *shared, const std::string &so_path)
{
    const Request request{shared, uint32_t(so_path.size())};
    return WriteAll(h.sock, &request, sizeof request) && WriteAll(h.sock, so_path.data(), so_path.size());
}

}  // namespace

LaunchOutcome RunInLaunchProcess(const std::string &so_path, SharedLaunch *shared, double timeout_s,
                                 bool (*interrupted)())
{
    Helper h = TakeHelper();
    if (!Send(h, shared, so_path)) {  // it ended since the check: once more with a new one
        Stop(h);
        h = Spawn();
        if (!Send(h, shared, so_path)) {
            Stop(h);
            throw std::runtime_error("the twin's new launch process did not take the launch");
        }
    }
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        int wait_ms = kPollMs;
        if (timeout_s > 0) {
            const double left = timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (left <= 0) {
                Stop(h);
                return {LaunchEnd::kTimedOut};
            }
            wait_ms = std::min(kPollMs, int(std::ceil(left * 1000)));
        }
        pollfd ready{h.sock, POLLIN, 0};
        if (poll(&ready, 1, wait_ms) > 0) {
            char done = 0;
            if (ReadAll(h.sock, &done, 1)) {
                GiveBack(h);
                return {LaunchEnd::kFinished};
            }
            const int status = Reap(h.pid);  // it ended during the launch
            close(h.sock);
            LaunchOutcome out{LaunchEnd::kCrashed};
            if (WIFSIGNALED(status)) {
                out.signal = WTERMSIG(status);
            } else {
                out.exit_status = WEXITSTATUS(status);
            }
            return out;
        }
        if (interrupted()) {
            Stop(h);
            return {LaunchEnd::kInterrupted};
        }
    }
}

}  // namespace twin::host
