// The clock, the process's memory and the watchdog thread that stops calls
// past their deadline or their memory bound.
#include "EngineContext.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace settee::engine {

// Process-wide state: initialisation and the watchdog thread.

namespace {
std::once_flag gInitOnce;
bool gInitialized = false;
}  // namespace

// The coarse monotonic clock (a few ms of resolution) is plenty for deadlines
// of seconds and costs less than the precise one on every call.
int64_t nowNanoseconds() {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return int64_t(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// The process's anonymous resident memory (resident minus file-backed and
// shared pages, so LMDB's memory map does not count), or 0 when unknown.
// The engine's own accounting misses what it mallocs for array elements,
// strings and typed arrays, so the bound is on what the system sees.
static uint64_t anonymousResidentBytes() {
#if defined(__linux__)
    FILE *file = fopen("/proc/self/statm", "r");
    if (!file) return 0;
    unsigned long long size = 0, resident = 0, shared = 0;
    int read = fscanf(file, "%llu %llu %llu", &size, &resident, &shared);
    fclose(file);
    if (read != 3 || resident < shared) return 0;
    return uint64_t(resident - shared) * uint64_t(sysconf(_SC_PAGESIZE));
#else
    return 0;
#endif
}

std::atomic<uint64_t> gNextCall{1};

namespace {

class Watchdog {
public:
    void add(settee_js_context *context) {
        std::lock_guard<std::mutex> lock(mutex_);
        contexts_.push_back(context);
        if (!thread_.joinable()) {
            stop_ = false;
            thread_ = std::thread([this] { run(); });
        }
    }

    void remove(settee_js_context *context) {
        std::lock_guard<std::mutex> lock(mutex_);
        for (size_t i = 0; i < contexts_.size(); i++) {
            if (contexts_[i] == context) {
                contexts_.erase(contexts_.begin() + i);
                break;
            }
        }
    }

    void stop() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        if (thread_.joinable()) thread_.join();
    }

private:
    void run() {
        std::unique_lock<std::mutex> lock(mutex_);
        while (!stop_) {
            // A 2 ms tick bounds how late a timeout fires; polling an atomic
            // costs the calls nothing.
            wake_.wait_for(lock, std::chrono::milliseconds(2));
            int64_t now = nowNanoseconds();
            for (settee_js_context *context : contexts_) {
                int64_t deadline = context->deadline.load(std::memory_order_acquire);
                if (deadline != 0 && now > deadline) {
                    uint64_t call = context->currentCall.load(std::memory_order_acquire);
                    if (context->timedOutCall.exchange(call) != call) {
                        JS_RequestInterruptCallback(context->cx);
                    }
                }
            }
            checkMemory(now);
        }
    }

    // Reads the process's memory when calls ran since the last tick, and asks
    // a call that grew it past its context's bound to measure what the engine
    // holds (the growth may be other threads'). A call's baseline is the
    // reading taken before it was first seen, when recent: a tick that comes
    // late (a busy machine) must not start the bound late.
    void checkMemory(int64_t now) {
        uint64_t calls = gNextCall.load(std::memory_order_relaxed);
        bool ran = calls != lastNextCall_;
        lastNextCall_ = calls;
        bool watching = false;
        for (settee_js_context *context : contexts_) {
            watching = watching || (context->memoryLimitBytes != 0 && context->currentCall.load() != 0);
        }
        if (!ran && !watching) return;
        uint64_t resident = anonymousResidentBytes();
        if (resident == 0) return;
        bool previousIsRecent = previousResident_ != 0 && now - previousResidentAt_ < 500 * 1000000LL;
        for (settee_js_context *context : contexts_) {
            uint64_t call = context->currentCall.load(std::memory_order_acquire);
            if (call == 0 || context->memoryLimitBytes == 0) continue;
            if (context->watchedCall != call) {
                context->watchedCall = call;
                context->residentAtCallStart = previousIsRecent ? std::min(previousResident_, resident) : resident;
                continue;
            }
            if (context->memoryCheckCall.load(std::memory_order_acquire) == call) {
                // Asked: wait for the answer. The engine held less than the
                // bound, so at most that much of the growth up to the request
                // was the call's: the rest is the process's, not the call's.
                if (context->memoryCheckedCall.load(std::memory_order_acquire) != call) continue;
                uint64_t engine = context->engineBytesAtCheck.load(std::memory_order_relaxed);
                if (context->residentAtCheck > engine) {
                    context->residentAtCallStart = std::max(context->residentAtCallStart, context->residentAtCheck - engine);
                }
                // In this order: the call answers only while asked and not answered.
                context->memoryCheckCall.store(0, std::memory_order_release);
                context->memoryCheckedCall.store(0, std::memory_order_release);
            }
            if (resident < context->residentAtCallStart) {
                // Memory freed since (a previous call's garbage, say) does not
                // add to this call's allowance.
                context->residentAtCallStart = resident;
            } else if (resident - context->residentAtCallStart > context->memoryLimitBytes) {
                context->residentAtCheck = resident;
                context->memoryCheckCall.store(call, std::memory_order_release);
                JS_RequestInterruptCallback(context->cx);
            }
        }
        previousResident_ = resident;
        previousResidentAt_ = now;
        requestKeptMemoryChecks(resident);
    }

    // Each time the process has grown by a step since the last request, every
    // context measures what its functions keep after its next call. Growth
    // that is not the engine's (LMDB's pages, the host's data) costs one
    // measurement per step.
    void requestKeptMemoryChecks(uint64_t resident) {
        static constexpr uint64_t step = kKeptCheckStep;
        if (residentAtKeptRequest_ == 0 || resident < residentAtKeptRequest_) {
            residentAtKeptRequest_ = resident;
            return;
        }
        if (resident - residentAtKeptRequest_ < step) return;
        residentAtKeptRequest_ = resident;
        for (settee_js_context *context : contexts_) {
            if (context->keptMemoryLimitBytes != 0) context->keptMemoryCheckRequested.store(true);
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<settee_js_context *> contexts_;
    std::thread thread_;
    bool stop_ = false;
    uint64_t lastNextCall_ = 0;
    uint64_t previousResident_ = 0;
    int64_t previousResidentAt_ = 0;
    uint64_t residentAtKeptRequest_ = 0;
};

}  // namespace

namespace {
Watchdog gWatchdog;
}  // namespace

bool initializeEngine() {
    std::call_once(gInitOnce, [] { gInitialized = JS_Init(); });
    return gInitialized;
}

void shutDownEngine() {
    gWatchdog.stop();
    if (gInitialized) {
        JS_ShutDown();
        gInitialized = false;
    }
}

void watch(settee_js_context *context) { gWatchdog.add(context); }

void unwatch(settee_js_context *context) { gWatchdog.remove(context); }

settee_js_context *contextOf(JSContext *cx) {
    return static_cast<settee_js_context *>(JS_GetContextPrivate(cx));
}

bool interruptCallback(JSContext *cx) {
    settee_js_context *context = contextOf(cx);
    if (!context) return true;
    if (context->interruptRequested.load()) return false;
    uint64_t call = context->currentCall.load();
    // A stale request (the call it was meant for already ended) is ignored.
    if (call == 0) return true;
    if (context->timedOutCall.load() == call) return false;
    if (context->memoryCheckCall.load(std::memory_order_acquire) == call &&
        context->memoryCheckedCall.load(std::memory_order_acquire) != call && !callWithinMemoryBound(context, call)) {
        return false;
    }
    return context->memoryExceededCall.load() != call;
}

static bool blockCodeGeneration(JSContext *, JS::RuntimeCode, JS::HandleString) { return false; }

extern const JSSecurityCallbacks kBlockingSecurityCallbacks;
const JSSecurityCallbacks kBlockingSecurityCallbacks = {blockCodeGeneration, nullptr};

}  // namespace settee::engine
