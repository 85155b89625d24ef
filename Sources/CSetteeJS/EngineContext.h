// The engine's state and the pieces its source files share: a context, its
// promise reactions, how a failure is described, a call's deadline scope.
// Private to the shim (settee_js.h is its interface).
#pragma once

#include "settee_js.h"

#include "JSONOutput.h"
#include "SpiderMonkey.h"

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

using settee::ByteBuffer;

// Promise reactions, queued as the engine hands them over and run by the
// context at the end of each call (a microtask checkpoint), inside the call's
// time limit. Without a queue the engine crashes on the first `then`.
class ReactionQueue : public JS::JobQueue {
public:
    JSObject *getIncumbentGlobal(JSContext *cx) override { return JS::CurrentGlobalOrNull(cx); }

    bool enqueuePromiseJob(JSContext *cx, JS::HandleObject, JS::HandleObject job, JS::HandleObject,
                           JS::HandleObject) override {
        jobs.push_back(std::make_unique<JS::PersistentRootedObject>(cx, job));
        return true;
    }

    // Only the debugger calls this; the context drains the queue itself.
    void runJobs(JSContext *) override {}

    bool empty() const override { return jobs.empty(); }

    std::deque<std::unique_ptr<JS::PersistentRootedObject>> jobs;
    // Promises rejected with no handler (yet): one left when the reactions
    // have run fails the call, as an uncaught exception would.
    std::vector<std::unique_ptr<JS::PersistentRootedObject>> unhandledRejections;

    void clear() {
        jobs.clear();
        unhandledRejections.clear();
    }

    static void trackRejection(JSContext *cx, bool, JS::HandleObject promise, JS::PromiseRejectionHandlingState state,
                               void *data) {
        auto &rejections = static_cast<ReactionQueue *>(data)->unhandledRejections;
        if (state == JS::PromiseRejectionHandlingState::Unhandled) {
            rejections.push_back(std::make_unique<JS::PersistentRootedObject>(cx, promise));
            return;
        }
        for (size_t i = 0; i < rejections.size(); i++) {
            if (rejections[i]->get() == promise) {
                rejections.erase(rejections.begin() + i);
                return;
            }
        }
    }

private:
    class Saved : public SavedJobQueue {};
    js::UniquePtr<SavedJobQueue> saveJobQueue(JSContext *cx) override {
        auto saved = js::MakeUnique<Saved>();
        if (!saved) JS_ReportOutOfMemory(cx);
        return saved;
    }
};

struct settee_js_context {
    JSContext *cx = nullptr;
    // The host realm: documents and arguments are parsed here, and (for the
    // query server) its runtime runs here. No compiled function runs in it,
    // and its built-ins are frozen before the first one is compiled.
    std::unique_ptr<JS::PersistentRootedObject> global;
    bool hostHardened = false;
    // The query server's globals for every function's realm (null otherwise).
    std::unique_ptr<JS::PersistentRootedObject> sandboxGlobals;
    // The preludes, parsed once and instantiated in each function's realm.
    RefPtr<JS::Stencil> prelude;
    RefPtr<JS::Stencil> requirePrelude;
    ReactionQueue reactions;
    // Each compiled function, in a realm of its own.
    std::vector<std::unique_ptr<JS::PersistentRootedObject>> functions;
    std::vector<int32_t> freeHandles;
    // What each handle was compiled from, to compile it again when the global
    // state is reset (see keepWithinKeptBound).
    struct Source {
        std::string text;  // trimmed
        std::string name;
        std::string library;
        bool hasLibrary = false;
    };
    std::vector<Source> sources;

    // Timeouts: the watchdog compares `deadline` (steady-clock ns, 0 = none)
    // with the clock and interrupts the call whose number it read.
    std::atomic<int64_t> deadline{0};
    std::atomic<uint64_t> currentCall{0};
    std::atomic<uint64_t> timedOutCall{0};
    std::atomic<bool> interruptRequested{false};
    uint32_t timeoutMilliseconds = 0;

    // Memory: the watchdog notes the process's anonymous resident memory as a
    // call starts (and the lowest it sees after). Once it has grown by more
    // than `memoryLimitBytes` (0 = no bound) the watchdog asks the call to
    // measure what the engine holds (`memoryCheckCall`): over the bound, the
    // call is stopped (`memoryExceededCall`); under it, the growth was not all
    // the call's, and the call answers with the engine's size
    // (`memoryCheckedCall`, `engineBytesAtCheck`) for the watchdog to move the
    // call's starting point by what the rest of the process took. Only the
    // watchdog touches the fields without atomics.
    uint64_t watchedCall = 0;
    uint64_t residentAtCallStart = 0;
    uint64_t residentAtCheck = 0;
    uint64_t memoryLimitBytes = 0;
    std::atomic<uint64_t> memoryCheckCall{0};
    std::atomic<uint64_t> memoryCheckedCall{0};
    std::atomic<uint64_t> engineBytesAtCheck{0};
    std::atomic<uint64_t> memoryExceededCall{0};
    // Memory kept between calls: the watchdog asks for a measurement each time
    // the process has grown by a step; the context takes it after its call.
    uint64_t keptMemoryLimitBytes = 0;
    std::atomic<bool> keptMemoryCheckRequested{false};
    uint64_t heapBytesAtKeptCheck = 0;
    uint64_t majorCollectionsAtKeptCheck = 0;
    bool queryServerInstalled = false;

    // Output of the running call.
    ByteBuffer output;
    ByteBuffer *emitTarget = nullptr;  // rows of the map function running now
    uint32_t emitCount = 0;
    // Where the running map function's rows start in `emitTarget`, the bound
    // on their size (0 = none), and whether the function went past it.
    size_t emitStart = 0;
    uint64_t emitLimitBytes = 0;
    bool emitOverflowed = false;
    std::vector<std::string> logs;
    std::vector<char16_t> utf16;

    // The query server's input and output (settee_js_context_install_query_server).
    settee_js_host host{};

    // Error strings handed out through settee_js_error.
    std::string errorMessage;
    std::string errorStack;
};

namespace settee::engine {

// How much the process (or a context's GC heap past the kept bound) grows
// between two measurements of what the functions keep.
constexpr uint64_t kKeptCheckStep = 32 << 20;

// --- Watchdog.cpp: the clock, the process's memory, the watchdog thread.
int64_t nowNanoseconds();
// Numbers the calls (CallScope); the watchdog reads it to know whether any ran.
extern std::atomic<uint64_t> gNextCall;
bool initializeEngine();
void shutDownEngine();
void watch(settee_js_context *context);
void unwatch(settee_js_context *context);
settee_js_context *contextOf(JSContext *cx);
bool interruptCallback(JSContext *cx);
extern const JSSecurityCallbacks kBlockingSecurityCallbacks;

// --- Failures.cpp: what went wrong, for the C interface and the output.
struct Failure {
    settee_js_status status = SETTEE_JS_RUNTIME_ERROR;
    std::string message;
    std::string stack;
    // The thrown value as couchjs's errstr shows it (`e.toSource()`), when a
    // value was thrown: `(new String("boom"))`, `(new Error("boom", "file", 1))`.
    std::string source;
    uint32_t line = 0;
    uint32_t column = 0;
};
void setError(settee_js_context *context, settee_js_error *error, settee_js_status status,
              std::string message, uint32_t line = 0, uint32_t column = 0, std::string stack = "");
void releaseMemory(JSContext *cx);
std::string stringOf(JSContext *cx, JS::HandleValue value);
Failure takeFailure(settee_js_context *context, uint32_t lineOneShift);
void appendFailure(ByteBuffer &out, const Failure &failure);
void appendLogs(settee_js_context *context);

// A call with the context's deadline.

class CallScope {
public:
    explicit CallScope(settee_js_context *context) : context_(context) {
        context->currentCall.store(gNextCall.fetch_add(1));
        if (context->timeoutMilliseconds > 0) {
            context->deadline.store(nowNanoseconds() + int64_t(context->timeoutMilliseconds) * 1000000,
                                    std::memory_order_release);
        }
    }
    ~CallScope() {
        context_->deadline.store(0, std::memory_order_release);
        context_->currentCall.store(0);
    }

private:
    settee_js_context *context_;
};


// --- Realms.cpp: the host realm, each function's realm, compiling, calling.
bool setUpGlobal(settee_js_context *context);
bool hardenHost(settee_js_context *context);
bool newSandbox(settee_js_context *context, bool withRequire, JS::MutableHandleObject sandbox,
                JS::MutableHandleObject makeRequire);
JSObject *functionFor(settee_js_context *context, int32_t handle);
size_t trimmedLength(const char *source, size_t length);
bool parseJSON(settee_js_context *context, const char *bytes, size_t length, JS::MutableHandleValue out);
bool compileSource(settee_js_context *context, const settee_js_context::Source &compiled,
                   JS::MutableHandleObject function, settee_js_error *error);
bool callFunction(settee_js_context *context, JS::HandleValue function, const JS::HandleValueArray &arguments,
                  JS::MutableHandleValue result);

// --- AnonymousFunction.cpp: sources with helpers declared before the function.
enum class AnonymousFunctionRewrite {
    // Not such a source (or not one that compiles): the exception pending
    // before the call is pending again.
    notApplicable,
    // `factory` is `function (require)` returning the function (run it to get it).
    evaluated,
};
// Called when a source wrapped in parentheses failed to evaluate (its
// exception pending), in the function's realm.
AnonymousFunctionRewrite evaluateWithAnonymousFunction(JSContext *cx, const std::string &source, const char *file,
                                                       JS::MutableHandleValue factory);

// --- MemoryBounds.cpp: what the engine holds, measured: a call's bound and
// the bound on what functions keep between calls.
// In the interrupt callback, when the watchdog asked: false if the call holds
// more than its bound (it is then stopped as out of memory).
bool callWithinMemoryBound(settee_js_context *context, uint64_t call);
void finishCall(settee_js_context *context, size_t function_count, settee_js_output *output);

}  // namespace settee::engine
