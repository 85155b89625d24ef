// The C interface of settee_js.h over SpiderMonkey 102.
#include "settee_js.h"

#include "JSONOutput.h"
#include "Prelude.h"
#include "QueryServerPrelude.h"
#include "SpiderMonkey.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>

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
    // call starts (and the lowest it sees after) and stops the call once it has
    // grown by more than `memoryLimitBytes` (0 = no bound). Only the watchdog
    // touches the first two.
    uint64_t watchedCall = 0;
    uint64_t residentAtCallStart = 0;
    uint64_t memoryLimitBytes = 0;
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

namespace {

// ---------------------------------------------------------------------------
// Process-wide state: initialisation and the watchdog thread.

std::once_flag gInitOnce;
bool gInitialized = false;

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
uint64_t anonymousResidentBytes() {
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

// How much the process (or a context's GC heap past the kept bound) grows
// between two measurements of what the functions keep.
constexpr uint64_t kKeptCheckStep = 32 << 20;

// Numbers the calls (CallScope); the watchdog reads it to know whether any ran.
std::atomic<uint64_t> gNextCall{1};

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

    // Reads the process's memory when calls ran since the last tick, and stops
    // a call that grew it past its context's bound. A call's baseline is the
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
            } else if (resident < context->residentAtCallStart) {
                // Memory freed since (a previous call's garbage, say) does not
                // add to this call's allowance.
                context->residentAtCallStart = resident;
            } else if (resident - context->residentAtCallStart > context->memoryLimitBytes &&
                       context->memoryExceededCall.exchange(call) != call) {
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

Watchdog gWatchdog;

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
    return context->timedOutCall.load() != call && context->memoryExceededCall.load() != call;
}

bool blockCodeGeneration(JSContext *, JS::RuntimeCode, JS::HandleString) { return false; }

const JSSecurityCallbacks kBlockingSecurityCallbacks = {blockCodeGeneration, nullptr};

const JSClass kGlobalClass = {"global", JSCLASS_GLOBAL_FLAGS, &JS::DefaultGlobalClassOps};

// ---------------------------------------------------------------------------
// Errors

void setError(settee_js_context *context, settee_js_error *error, settee_js_status status,
              std::string message, uint32_t line = 0, uint32_t column = 0, std::string stack = "") {
    if (!error) return;
    context->errorMessage = std::move(message);
    context->errorStack = std::move(stack);
    error->status = status;
    error->message = context->errorMessage.c_str();
    error->message_length = context->errorMessage.size();
    error->stack = context->errorStack.c_str();
    error->stack_length = context->errorStack.size();
    error->line = line;
    error->column = column;
}

// After a call stopped for its memory or its time: collect what it left behind
// and hand freed pages back to the system, so the bound holds for the next call.
// What the functions keep is measured after this call (keepWithinKeptBound):
// globals that fill the heap would fail every call after.
void releaseMemory(JSContext *cx) {
    if (settee_js_context *context = contextOf(cx)) context->keptMemoryCheckRequested.store(true);
    JS_GC(cx);
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

struct Failure {
    settee_js_status status = SETTEE_JS_RUNTIME_ERROR;
    std::string message;
    std::string stack;
    uint32_t line = 0;
    uint32_t column = 0;
};

std::string stringOf(JSContext *cx, JS::HandleValue value) {
    std::string out;
    if (value.isUndefined()) return "undefined";
    if (value.isString()) {
        if (!settee::appendUTF8(cx, value.toString(), out)) JS_ClearPendingException(cx);
        return out;
    }
    ByteBuffer json;
    if (settee::writeJSON(cx, value, json)) {
        out.assign(reinterpret_cast<const char *>(json.data()), json.size());
    } else {
        JS_ClearPendingException(cx);
        out = "(a value that cannot be shown)";
    }
    return out;
}

// Describes why the last engine call failed and clears the exception. `lineOneShift`
// is how many characters of wrapper precede the user's source on line 1.
Failure takeFailure(settee_js_context *context, uint32_t lineOneShift) {
    JSContext *cx = context->cx;
    Failure failure;
    uint64_t call = context->currentCall.load();
    if (context->interruptRequested.exchange(false)) {
        JS_ClearPendingException(cx);
        failure.status = SETTEE_JS_INTERRUPTED;
        failure.message = "the call was interrupted";
        return failure;
    }
    if (call != 0 && context->memoryExceededCall.load() == call) {
        JS_ClearPendingException(cx);
        failure.status = SETTEE_JS_OUT_OF_MEMORY;
        failure.message = "out of memory: the call used more than " +
                          std::to_string(context->memoryLimitBytes >> 20) + " MiB";
        releaseMemory(cx);
        return failure;
    }
    if (call != 0 && context->timedOutCall.load() == call) {
        JS_ClearPendingException(cx);
        failure.status = SETTEE_JS_TIMEOUT;
        failure.message = "function timed out after " + std::to_string(context->timeoutMilliseconds) + " ms";
        // A runaway call may have piled up garbage: left in place, it would
        // count against the next call's memory bound.
        releaseMemory(cx);
        return failure;
    }
    if (!JS_IsExceptionPending(cx)) {
        // Uncatchable without an interrupt: the engine gave up for lack of memory.
        failure.status = SETTEE_JS_OUT_OF_MEMORY;
        failure.message = "out of memory";
        releaseMemory(cx);
        return failure;
    }
    JS::ExceptionStack exception(cx);
    if (!JS::StealPendingExceptionStack(cx, &exception)) {
        JS_ClearPendingException(cx);
        failure.message = "an exception that could not be read";
        return failure;
    }
    JS::RootedValue value(cx, exception.exception());
    if (value.isString()) {
        std::string text = stringOf(cx, value);
        if (text == "out of memory") {
            failure.status = SETTEE_JS_OUT_OF_MEMORY;
            failure.message = text;
            releaseMemory(cx);
            return failure;
        }
    }
    bool isError = value.isObject() && JS_ErrorFromException(cx, JS::RootedObject(cx, &value.toObject()));
    if (isError) {
        JS::ErrorReportBuilder report(cx);
        if (report.init(cx, exception, JS::ErrorReportBuilder::NoSideEffects)) {
            if (report.toStringResult()) failure.message = report.toStringResult().c_str();
            if (JSErrorReport *r = report.report()) {
                failure.line = r->lineno;
                uint32_t column = r->column + 1;
                if (failure.line == 1) column = column > lineOneShift ? column - lineOneShift : 1;
                failure.column = failure.line ? column : 0;
            }
        } else {
            JS_ClearPendingException(cx);
        }
    } else {
        // A thrown non-Error (CouchDB code throws arrays and objects): shown as JSON.
        failure.message = stringOf(cx, value);
    }
    if (failure.message.empty()) failure.message = stringOf(cx, value);
    JS::RootedObject stack(cx, exception.stack());
    if (stack) {
        JS::RootedString stackString(cx);
        if (JS::BuildStackString(cx, nullptr, stack, &stackString) && stackString) {
            if (!settee::appendUTF8(cx, stackString, failure.stack)) JS_ClearPendingException(cx);
        } else {
            JS_ClearPendingException(cx);
        }
    }
    return failure;
}

void appendFailure(ByteBuffer &out, const Failure &failure) {
    out.appendU32(static_cast<uint32_t>(failure.status));
    out.appendU32(failure.line);
    out.appendU32(failure.column);
    out.appendString(failure.message.data(), failure.message.size());
    out.appendString(failure.stack.data(), failure.stack.size());
}

void appendLogs(settee_js_context *context) {
    context->output.appendU32(static_cast<uint32_t>(context->logs.size()));
    for (const std::string &line : context->logs) context->output.appendString(line.data(), line.size());
    context->logs.clear();
}

// ---------------------------------------------------------------------------
// Calls with a deadline

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

// ---------------------------------------------------------------------------
// Natives

bool nativeEmit(JSContext *cx, unsigned argc, JS::Value *vp) {
    JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
    settee_js_context *context = contextOf(cx);
    if (!context->emitTarget) {
        JS_ReportErrorASCII(cx, "emit() can only be called from a map function");
        return false;
    }
    ByteBuffer &out = *context->emitTarget;
    size_t mark = out.size();
    for (unsigned i = 0; i < 2; i++) {
        size_t lengthAt = out.size();
        out.appendU32(0);
        if (!settee::writeJSON(cx, args.get(i), out)) {
            out.truncate(mark);
            return false;
        }
        out.patchU32(lengthAt, static_cast<uint32_t>(out.size() - lengthAt - 4));
    }
    if (context->emitLimitBytes != 0 && out.size() - context->emitStart > context->emitLimitBytes) {
        // The function fails for this document even if it catches this.
        out.truncate(mark);
        context->emitOverflowed = true;
        JS_ReportErrorASCII(cx, "emitted more than %llu bytes for one document",
                            static_cast<unsigned long long>(context->emitLimitBytes));
        return false;
    }
    context->emitCount++;
    args.rval().setUndefined();
    return true;
}

bool nativeLog(JSContext *cx, unsigned argc, JS::Value *vp) {
    JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
    settee_js_context *context = contextOf(cx);
    std::string message;
    if (args.get(0).isUndefined()) {
        message = "Error: attempting to log message of 'undefined'.";
    } else {
        message = stringOf(cx, args.get(0));
    }
    // Bounded so a log call in a loop cannot exhaust memory.
    if (context->logs.size() < 1000) context->logs.push_back(std::move(message));
    args.rval().setUndefined();
    return true;
}

// Compiles a CommonJS module body for `require` (works while eval is blocked).
bool nativeCompileModule(JSContext *cx, unsigned argc, JS::Value *vp) {
    JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
    JS::RootedString source(cx, JS::ToString(cx, args.get(0)));
    JS::RootedString id(cx, JS::ToString(cx, args.get(1)));
    if (!source || !id) return false;
    std::string body, name;
    if (!settee::appendUTF8(cx, source, body) || !settee::appendUTF8(cx, id, name)) return false;
    const char *argNames[] = {"module", "exports", "require"};
    JS::CompileOptions options(cx);
    options.setFileAndLine(name.c_str(), 1);
    JS::SourceText<mozilla::Utf8Unit> text;
    if (!text.init(cx, body.data(), body.size(), JS::SourceOwnership::Borrowed)) return false;
    JS::RootedObjectVector envChain(cx);
    JSFunction *fn = JS::CompileFunction(cx, envChain, options, "module", 3, argNames, text);
    if (!fn) return false;
    args.rval().setObject(*JS_GetFunctionObject(fn));
    return true;
}

// Freezes every object reachable from `roots` (own properties, accessors and
// prototypes), and first makes the built-ins no property reaches (iterator
// and generator prototypes), so none is made later unfrozen. Run in the host
// realm, it leaves nothing there for a function to change: a document's
// objects lead only to frozen built-ins.
const char kHardenSource[] = R"JS((function (roots) {
  "use strict";
  var freeze = Object.freeze, getPrototypeOf = Object.getPrototypeOf;
  var ownKeys = Reflect.ownKeys, describe = Object.getOwnPropertyDescriptor;
  function* generator() {}
  async function asyncFunction() {}
  async function* asyncGenerator() {}
  var pending = roots.concat([
    generator, generator(), asyncFunction, asyncGenerator, asyncGenerator(),
    [][Symbol.iterator](), ""[Symbol.iterator](), new Map()[Symbol.iterator](), new Set()[Symbol.iterator](),
    /a/[Symbol.matchAll]("a"), Object.getPrototypeOf(Int8Array), Promise.resolve()
  ]);
  var seen = new Set();
  while (pending.length > 0) {
    var value = pending.pop();
    if (value === null || value === undefined || (typeof value !== "object" && typeof value !== "function") ||
        seen.has(value)) continue;
    seen.add(value);
    freeze(value);
    pending.push(getPrototypeOf(value));
    var keys = ownKeys(value);
    for (var i = 0; i < keys.length; i++) {
      var property = describe(value, keys[i]);
      if (property === undefined) continue;
      if ("value" in property) pending.push(property.value);
      else pending.push(property.get, property.set);
    }
  }
}))JS";

// Makes the host realm: standard classes and the natives the query server's
// runtime calls. It gets no prelude: no function runs here.
bool setUpGlobal(settee_js_context *context) {
    JSContext *cx = context->cx;
    JS::RealmOptions options;
    JS::RootedObject global(cx, JS_NewGlobalObject(cx, &kGlobalClass, nullptr, JS::FireOnNewGlobalHook, options));
    if (!global) return false;
    context->global = std::make_unique<JS::PersistentRootedObject>(cx, global);
    context->hostHardened = false;
    JSAutoRealm realm(cx, global);
    if (!JS::InitRealmStandardClasses(cx)) return false;
    return JS_DefineFunction(cx, global, "emit", nativeEmit, 2, JSPROP_ENUMERATE | JSPROP_READONLY) &&
           JS_DefineFunction(cx, global, "log", nativeLog, 1, JSPROP_ENUMERATE | JSPROP_READONLY);
}

// Freezes the host realm (see kHardenSource), once, before any function is
// compiled: after it, nothing a function does through a document's objects,
// or through the query server's, is seen by another function.
bool hardenHost(settee_js_context *context) {
    if (context->hostHardened) return true;
    JSContext *cx = context->cx;
    JS::RootedObject global(cx, *context->global);
    JSAutoRealm realm(cx, global);
    JS::CompileOptions options(cx);
    options.setFileAndLine("settee:harden", 1);
    JS::SourceText<mozilla::Utf8Unit> source;
    JS::RootedValue harden(cx);
    if (!source.init(cx, kHardenSource, strlen(kHardenSource), JS::SourceOwnership::Borrowed) ||
        !JS::Evaluate(cx, options, source, &harden)) {
        return false;
    }
    JS::RootedValueVector roots(cx);
    if (!roots.append(JS::ObjectValue(*global))) return false;
    if (context->sandboxGlobals && !roots.append(JS::ObjectValue(**context->sandboxGlobals))) return false;
    JS::RootedObject rootArray(cx, JS::NewArrayObject(cx, JS::HandleValueArray(roots)));
    JS::RootedValue argument(cx, JS::ObjectOrNullValue(rootArray));
    JS::RootedValue ignored(cx);
    if (!rootArray || !JS::Call(cx, JS::UndefinedHandleValue, harden, JS::HandleValueArray(argument), &ignored)) {
        return false;
    }
    context->hostHardened = true;
    return true;
}

// Runs `source`, parsed once into `stencil`, in the current realm; its value
// in `value`.
bool runPrelude(JSContext *cx, RefPtr<JS::Stencil> &stencil, const char *source, const char *name,
                JS::MutableHandleValue value) {
    JS::CompileOptions options(cx);
    options.setFileAndLine(name, 1);
    if (!stencil) {
        JS::SourceText<mozilla::Utf8Unit> text;
        if (!text.init(cx, source, strlen(source), JS::SourceOwnership::Borrowed)) return false;
        stencil = JS::CompileGlobalScriptToStencil(cx, options, text);
        if (!stencil) return false;
    }
    JS::InstantiateOptions instantiateOptions(options);
    JS::RootedScript script(cx, JS::InstantiateGlobalStencil(cx, instantiateOptions, stencil));
    return script && JS_ExecuteScript(cx, script, value);
}

// Makes a realm for one function, in the host's compartment (so objects pass
// between them as they are, with no wrappers): its own global and built-ins,
// CouchDB's map globals, and for the query server the design-function
// globals. With `withRequire`, `makeRequire` is set to the maker of its
// `require` (only functions that can load modules pay for it).
bool newSandbox(settee_js_context *context, bool withRequire, JS::MutableHandleObject sandbox,
                JS::MutableHandleObject makeRequire) {
    JSContext *cx = context->cx;
    JS::RealmOptions options;
    options.creationOptions().setExistingCompartment(*context->global);
    JS::RootedObject global(cx, JS_NewGlobalObject(cx, &kGlobalClass, nullptr, JS::DontFireOnNewGlobalHook, options));
    if (!global) return false;
    JSAutoRealm realm(cx, global);
    // Read-only, so a function cannot break them for itself by accident.
    if (!JS_DefineFunction(cx, global, "emit", nativeEmit, 2, JSPROP_ENUMERATE | JSPROP_READONLY)) return false;
    if (!JS_DefineFunction(cx, global, "log", nativeLog, 1, JSPROP_ENUMERATE | JSPROP_READONLY)) return false;
    JS::RootedValue ignored(cx);
    if (!runPrelude(cx, context->prelude, settee::kPreludeSource, "settee:prelude", &ignored)) return false;
    if (withRequire) {
        JS::RootedValue maker(cx);
        if (!JS_DefineFunction(cx, global, "__settee_compileModule", nativeCompileModule, 2, 0) ||
            !runPrelude(cx, context->requirePrelude, settee::kRequireSource, "settee:require", &maker) ||
            !maker.isObject()) {
            return false;
        }
        makeRequire.set(&maker.toObject());
    }
    if (context->sandboxGlobals) {
        JS::RootedObject globals(cx, *context->sandboxGlobals);
        JS::Rooted<JS::IdVector> ids(cx, JS::IdVector(cx));
        if (!JS_Enumerate(cx, globals, &ids)) return false;
        JS::RootedValue value(cx);
        for (size_t i = 0; i < ids.length(); i++) {
            if (!JS_GetPropertyById(cx, globals, ids[i], &value) ||
                !JS_DefinePropertyById(cx, global, ids[i], value, JSPROP_ENUMERATE | JSPROP_READONLY)) {
                return false;
            }
        }
    }
    sandbox.set(global);
    return true;
}

// Runs the promise reactions the call queued, in order, each in its own realm;
// false (with the exception pending, or none when interrupted) when one fails
// or a promise is left rejected with no handler: the rest are dropped with it.
bool drainReactions(settee_js_context *context) {
    JSContext *cx = context->cx;
    JS::RootedObject job(cx);
    JS::RootedValue ignored(cx);
    while (!context->reactions.jobs.empty()) {
        job = context->reactions.jobs.front()->get();
        context->reactions.jobs.pop_front();
        JSAutoRealm realm(cx, job);
        if (!JS::Call(cx, JS::UndefinedHandleValue, job, JS::HandleValueArray::empty(), &ignored)) {
            context->reactions.clear();
            return false;
        }
    }
    if (!context->reactions.unhandledRejections.empty()) {
        JS::RootedObject promise(cx, context->reactions.unhandledRejections.front()->get());
        context->reactions.clear();
        JSAutoRealm realm(cx, promise);
        JS::RootedValue reason(cx, JS::GetPromiseResult(promise));
        JS_SetPendingException(cx, reason, JS::ExceptionStackBehavior::DoNotCapture);
        return false;
    }
    return true;
}

JSObject *functionFor(settee_js_context *context, int32_t handle) {
    if (handle < 0 || size_t(handle) >= context->functions.size() || !context->functions[handle]) return nullptr;
    return context->functions[handle]->get();
}

// Trailing whitespace and semicolons would break the `(` … `)` wrapper.
size_t trimmedLength(const char *source, size_t length) {
    while (length > 0) {
        char c = source[length - 1];
        if (c == ';' || c == ' ' || c == '\n' || c == '\r' || c == '\t') length--;
        else break;
    }
    return length;
}


bool isASCII(const char *bytes, size_t length) {
    size_t i = 0;
    for (; i + 8 <= length; i += 8) {
        uint64_t word;
        memcpy(&word, bytes + i, 8);
        if (word & 0x8080808080808080ull) return false;
    }
    for (; i < length; i++) {
        if (static_cast<unsigned char>(bytes[i]) & 0x80) return false;
    }
    return true;
}

// Parses UTF-8 JSON. ASCII text (most documents) goes in as a Latin-1 string,
// which the engine parses faster than UTF-16 and without a conversion pass.
bool parseJSON(settee_js_context *context, const char *bytes, size_t length, JS::MutableHandleValue out) {
    JSContext *cx = context->cx;
    if (isASCII(bytes, length)) {
        JS::RootedString text(cx, JS_NewStringCopyN(cx, bytes, length));
        return text && JS_ParseJSON(cx, text, out);
    }
    settee::utf8ToUTF16(bytes, length, context->utf16);
    return JS_ParseJSON(cx, context->utf16.data(), uint32_t(context->utf16.size()), out);
}

// Evaluates a function's source in a realm of its own; false with `error` set.
bool compileSource(settee_js_context *context, const settee_js_context::Source &compiled,
                   JS::MutableHandleObject function, settee_js_error *error) {
    JSContext *cx = context->cx;
    CallScope scope(context);
    // In the host realm until the function's own is made: a failure to make
    // it (out of memory) leaves its exception to be taken there.
    JSAutoRealm hostRealm(cx, *context->global);
    JS::RootedObject sandbox(cx);
    JS::RootedObject makeRequire(cx);
    if (!hardenHost(context) || !newSandbox(context, compiled.hasLibrary, &sandbox, &makeRequire)) {
        Failure failure = takeFailure(context, 0);
        setError(context, error, failure.status == SETTEE_JS_RUNTIME_ERROR ? SETTEE_JS_INTERNAL_ERROR : failure.status,
                 "the function's realm could not be set up: " + failure.message);
        return false;
    }
    JSAutoRealm realm(cx, sandbox);
    std::string prefix = compiled.hasLibrary ? "(function (require) { return (" : "(";
    std::string wrapped = prefix + compiled.text + (compiled.hasLibrary ? "\n); })" : "\n)");
    JS::CompileOptions options(cx);
    options.setFileAndLine(compiled.name.c_str(), 1);
    JS::SourceText<mozilla::Utf8Unit> text;
    JS::RootedValue value(cx);
    if (!text.init(cx, wrapped.data(), wrapped.size(), JS::SourceOwnership::Borrowed) ||
        !JS::Evaluate(cx, options, text, &value) || !drainReactions(context)) {
        Failure failure = takeFailure(context, uint32_t(prefix.size()));
        settee_js_status status = failure.status == SETTEE_JS_RUNTIME_ERROR ? SETTEE_JS_COMPILE_ERROR : failure.status;
        setError(context, error, status, failure.message, failure.line, failure.column, failure.stack);
        return false;
    }
    if (compiled.hasLibrary) {
        // Bind `require` to this function's own module tree and cache.
        JS::RootedValue library(cx);
        JS::RootedValue require(cx);
        JS::RootedValue maker(cx, JS::ObjectValue(*makeRequire));
        JS::RootedValue factory(cx, value);
        bool ok = parseJSON(context, compiled.library.data(), compiled.library.size(), &library) &&
                  JS::Call(cx, JS::UndefinedHandleValue, maker, JS::HandleValueArray(library), &require) &&
                  JS::Call(cx, JS::UndefinedHandleValue, factory, JS::HandleValueArray(require), &value) &&
                  drainReactions(context);
        if (!ok) {
            Failure failure = takeFailure(context, 0);
            setError(context, error, SETTEE_JS_COMPILE_ERROR, failure.message, failure.line, failure.column,
                     failure.stack);
            return false;
        }
    }
    if (!value.isObject() || !JS::IsCallable(&value.toObject())) {
        std::string shown(compiled.text, 0, std::min<size_t>(compiled.text.size(), 200));
        setError(context, error, SETTEE_JS_COMPILE_ERROR, "Expression does not eval to a function. (" + shown + ")",
                 1, 1);
        return false;
    }
    function.set(&value.toObject());
    return true;
}

// Calls `function` in its own realm, then runs the reactions it queued.
bool callFunction(settee_js_context *context, JS::HandleValue function, const JS::HandleValueArray &arguments,
                  JS::MutableHandleValue result) {
    JSContext *cx = context->cx;
    JSAutoRealm realm(cx, &function.toObject());
    return JS::Call(cx, JS::UndefinedHandleValue, function, arguments, result) && drainReactions(context);
}

// ---------------------------------------------------------------------------
// Memory kept between calls

size_t mallocSizeOf(const void *pointer) {
#if defined(__GLIBC__)
    return pointer ? malloc_usable_size(const_cast<void *>(pointer)) : 0;
#else
    return 0;
#endif
}

// Typed-array data the engine's memory reporter misses: a typed array the JIT
// created owns its elements until something asks for its buffer, and only
// buffers are reported. The reporter calls the visitor for every object.
thread_local size_t tUnreportedTypedArrayBytes = 0;

class TypedArrayVisitor : public JS::ObjectPrivateVisitor {
public:
    TypedArrayVisitor() : JS::ObjectPrivateVisitor(visit) {}
    size_t sizeOfIncludingThis(nsISupports *) override { return 0; }

private:
    // No object of ours carries an nsISupports: this only counts. Slot 0 of a
    // typed array is its buffer once it has one (SpiderMonkey 102's layout);
    // data up to 96 bytes lives inside the object.
    static bool visit(JSObject *object, nsISupports **) {
        if (JS_IsTypedArrayObject(object) && !JS::GetReservedSlot(object, 0).isObject()) {
            size_t length = JS_GetTypedArrayByteLength(object);
            if (length > 96) tUnreportedTypedArrayBytes += length;
        }
        return false;
    }
};

// What the context's global holds: its GC heap and what that mallocs (array
// elements, string characters, typed arrays), garbage included.
size_t keptBytes(settee_js_context *context) {
    JSContext *cx = context->cx;
    JS::RootedObject global(cx, *context->global);
    JSAutoRealm realm(cx, global);
    JS::TabSizes sizes;
    TypedArrayVisitor visitor;
    tUnreportedTypedArrayBytes = 0;
    if (!JS::AddSizeOfTab(cx, global, mallocSizeOf, &visitor, &sizes)) return 0;
    return sizes.objects_ + sizes.strings_ + sizes.private_ + sizes.other_ + tUnreportedTypedArrayBytes;
}

// Replaces the host realm with a fresh one and compiles every live function
// again, each in a new realm, under its handle: what the functions kept in
// globals is gone.
void resetGlobalState(settee_js_context *context) {
    JSContext *cx = context->cx;
    for (auto &function : context->functions) function.reset();
    context->reactions.clear();
    context->global.reset();
    JS_GC(cx);
    if (!setUpGlobal(context)) {
        // Without a global no call can run: each reports its missing function.
        JS_ClearPendingException(cx);
        return;
    }
    for (size_t handle = 0; handle < context->sources.size(); handle++) {
        const settee_js_context::Source &compiled = context->sources[handle];
        if (compiled.text.empty()) continue;
        JS::RootedObject function(cx);
        settee_js_error ignored{};
        if (compileSource(context, compiled, &function, &ignored)) {
            context->functions[handle] = std::make_unique<JS::PersistentRootedObject>(cx, function);
        }
    }
    releaseMemory(cx);
}

// Where the next measurement's heap and collection triggers start from.
void noteKeptCheck(settee_js_context *context) {
    context->heapBytesAtKeptCheck = JS_GetGCParameter(context->cx, JSGC_BYTES);
    context->majorCollectionsAtKeptCheck = JS_GetGCParameter(context->cx, JSGC_MAJOR_GC_NUMBER);
}

// After a call, when asked (see below): measures what the functions keep,
// collects garbage if that is over the bound, and resets the global state if
// it still is. Returns false, with the failure to report for the call, if it
// was reset. Runs outside any realm, so the old global can go.
bool keepWithinKeptBound(settee_js_context *context, Failure &failure) {
    if (context->keptMemoryLimitBytes == 0 || context->queryServerInstalled) return true;
    JSContext *cx = context->cx;
    // Besides the watchdog's request: after each major collection (the engine
    // starts one as its heap or what that mallocs grows, typed arrays
    // included), and as the GC heap grows past the bound, in steps of a
    // quarter of it (at most kKeptCheckStep), since it can grow in pages the
    // process already holds, unseen by the watchdog.
    uint64_t heap = JS_GetGCParameter(cx, JSGC_BYTES);
    bool requested = context->keptMemoryCheckRequested.exchange(false) ||
                     JS_GetGCParameter(cx, JSGC_MAJOR_GC_NUMBER) != context->majorCollectionsAtKeptCheck ||
                     (heap > context->keptMemoryLimitBytes &&
                      heap >= context->heapBytesAtKeptCheck + std::min(kKeptCheckStep, context->keptMemoryLimitBytes / 4));
    if (!requested) return true;
    size_t kept = keptBytes(context);
    if (kept > context->keptMemoryLimitBytes) {
        JS_GC(cx);
        kept = keptBytes(context);
    }
    noteKeptCheck(context);
    if (kept <= context->keptMemoryLimitBytes) return true;
    resetGlobalState(context);
    noteKeptCheck(context);
    failure.status = SETTEE_JS_OUT_OF_MEMORY;
    failure.message = "out of memory: the functions kept " + std::to_string(kept >> 20) +
                      " MiB between calls, more than " + std::to_string(context->keptMemoryLimitBytes >> 20) +
                      " MiB; their global variables were cleared";
    return false;
}

// Ends a call of `function_count` functions: its output stands, or every
// function reports the kept-memory failure.
void finishCall(settee_js_context *context, size_t function_count, settee_js_output *output) {
    ByteBuffer &out = context->output;
    Failure failure;
    if (!keepWithinKeptBound(context, failure)) {
        out.clear();
        for (size_t i = 0; i < function_count; i++) appendFailure(out, failure);
    }
    appendLogs(context);
    output->bytes = out.data();
    output->length = out.size();
}

}  // namespace


// ---------------------------------------------------------------------------
// The C interface

extern "C" {

bool settee_js_initialize(void) {
    std::call_once(gInitOnce, [] { gInitialized = JS_Init(); });
    return gInitialized;
}

void settee_js_shut_down(void) {
    gWatchdog.stop();
    if (gInitialized) {
        JS_ShutDown();
        gInitialized = false;
    }
}

settee_js_context *settee_js_context_create(const settee_js_context_options *options, settee_js_error *error) {
    auto context = std::make_unique<settee_js_context>();
    if (!settee_js_initialize()) {
        setError(context.get(), error, SETTEE_JS_INTERNAL_ERROR, "the JavaScript engine could not be initialised");
        return nullptr;
    }
    uint64_t heapLimit = options && options->gc_heap_limit_bytes ? options->gc_heap_limit_bytes : 0;
    JSContext *cx = JS_NewContext(JS::DefaultHeapMaxBytes);
    if (!cx) {
        setError(context.get(), error, SETTEE_JS_INTERNAL_ERROR, "the JavaScript engine could not create a context");
        return nullptr;
    }
    context->cx = cx;
    JS_SetContextPrivate(cx, context.get());
    if (options && options->native_stack_quota_bytes) JS_SetNativeStackQuota(cx, options->native_stack_quota_bytes);
    if (heapLimit) JS_SetGCParameter(cx, JSGC_MAX_BYTES, uint32_t(std::min<uint64_t>(heapLimit, 0xFFFFFFFFu)));
    if (!JS::InitSelfHostedCode(cx)) {
        JS_DestroyContext(cx);
        setError(context.get(), error, SETTEE_JS_INTERNAL_ERROR, "the JavaScript engine could not start");
        return nullptr;
    }
    if (!(options && options->allow_code_generation)) JS_SetSecurityCallbacks(cx, &kBlockingSecurityCallbacks);
    JS_AddInterruptCallback(cx, interruptCallback);
    context->timeoutMilliseconds = options ? options->timeout_milliseconds : 0;
    context->memoryLimitBytes = options ? options->memory_limit_bytes : 0;
    context->keptMemoryLimitBytes = options ? options->kept_memory_limit_bytes : 0;
    context->emitLimitBytes = options ? options->emit_limit_bytes : 0;
    JS::SetJobQueue(cx, &context->reactions);
    JS::SetPromiseRejectionTrackerCallback(cx, ReactionQueue::trackRejection, &context->reactions);
    if (!setUpGlobal(context.get())) {
        Failure failure = takeFailure(context.get(), 0);
        setError(context.get(), error, SETTEE_JS_INTERNAL_ERROR, "the JavaScript globals could not be set up: " + failure.message);
        context->global.reset();
        JS_DestroyContext(cx);
        return nullptr;
    }
    gWatchdog.add(context.get());
    return context.release();
}

void settee_js_context_destroy(settee_js_context *context) {
    if (!context) return;
    gWatchdog.remove(context);
    context->functions.clear();
    context->sources.clear();
    context->reactions.clear();
    context->sandboxGlobals.reset();
    context->prelude = nullptr;
    context->requirePrelude = nullptr;
    context->global.reset();
    JS_DestroyContext(context->cx);
    delete context;
}

void settee_js_context_set_timeout(settee_js_context *context, uint32_t milliseconds) {
    context->timeoutMilliseconds = milliseconds;
}

void settee_js_context_interrupt(settee_js_context *context) {
    context->interruptRequested.store(true);
    JS_RequestInterruptCallback(context->cx);
}

void settee_js_context_collect_garbage(settee_js_context *context) { JS_GC(context->cx); }

int32_t settee_js_compile(settee_js_context *context, const char *source, size_t source_length, const char *name,
                          const char *library_json, size_t library_json_length, settee_js_error *error) {
    settee_js_context::Source compiled;
    compiled.text.assign(source, trimmedLength(source, source_length));
    compiled.name = name ? name : "function";
    compiled.hasLibrary = library_json != nullptr;
    if (library_json) compiled.library.assign(library_json, library_json_length);
    JS::RootedObject function(context->cx);
    if (!compileSource(context, compiled, &function, error)) return -1;
    int32_t handle;
    if (!context->freeHandles.empty()) {
        handle = context->freeHandles.back();
        context->freeHandles.pop_back();
    } else {
        handle = int32_t(context->functions.size());
        context->functions.emplace_back();
        context->sources.emplace_back();
    }
    context->functions[handle] = std::make_unique<JS::PersistentRootedObject>(context->cx, function);
    context->sources[handle] = std::move(compiled);
    return handle;
}

void settee_js_release(settee_js_context *context, int32_t function) {
    if (!functionFor(context, function)) return;
    context->functions[function].reset();
    context->sources[function] = settee_js_context::Source();
    context->freeHandles.push_back(function);
}

settee_js_status settee_js_map_document(settee_js_context *context, const int32_t *functions, size_t function_count,
                                        const char *document, size_t document_length, settee_js_output *output,
                                        settee_js_error *error) {
    JSContext *cx = context->cx;
    std::optional<JSAutoRealm> realm(std::in_place, cx, *context->global);
    ByteBuffer &out = context->output;
    out.clear();
    context->logs.clear();
    context->reactions.clear();

    JS::RootedValue doc(cx);
    {
        CallScope scope(context);
        if (!parseJSON(context, document, document_length, &doc)) {
            Failure failure = takeFailure(context, 0);
            setError(context, error, failure.status == SETTEE_JS_RUNTIME_ERROR ? SETTEE_JS_INVALID_INPUT : failure.status,
                     failure.message);
            return error ? error->status : SETTEE_JS_INVALID_INPUT;
        }
        if (doc.isObject()) {
            JS::RootedObject object(cx, &doc.toObject());
            if (!JS_DeepFreezeObject(cx, object)) {
                Failure failure = takeFailure(context, 0);
                setError(context, error, failure.status, failure.message);
                return failure.status;
            }
        }
    }
    JS::RootedValue fn(cx);
    JS::RootedValue ignored(cx);
    for (size_t i = 0; i < function_count; i++) {
        JSObject *function = functionFor(context, functions[i]);
        size_t start = out.size();
        if (!function) {
            Failure failure;
            failure.status = SETTEE_JS_INTERNAL_ERROR;
            failure.message = "no compiled function with handle " + std::to_string(functions[i]);
            appendFailure(out, failure);
            continue;
        }
        fn.setObject(*function);
        out.appendU32(0);
        out.appendU32(0);
        context->emitTarget = &out;
        context->emitCount = 0;
        context->emitStart = out.size();
        context->emitOverflowed = false;
        bool ok;
        {
            CallScope scope(context);
            ok = callFunction(context, fn, JS::HandleValueArray(doc), &ignored);
            if (!ok || context->emitOverflowed) {
                // The function's rows for this doc are dropped, as CouchDB does.
                Failure failure;
                if (!ok) failure = takeFailure(context, 0);
                if (context->emitOverflowed && failure.status == SETTEE_JS_RUNTIME_ERROR) {
                    failure.message = "emitted more than " + std::to_string(context->emitLimitBytes) +
                                      " bytes for one document";
                    failure.stack.clear();
                }
                ok = false;
                out.truncate(start);
                appendFailure(out, failure);
            }
        }
        context->emitTarget = nullptr;
        if (ok) out.patchU32(start + 4, context->emitCount);
    }
    // Nothing of this call may keep the global alive if it is reset.
    doc.setUndefined();
    fn.setUndefined();
    ignored.setUndefined();
    realm.reset();
    finishCall(context, function_count, output);
    return SETTEE_JS_OK;
}

settee_js_status settee_js_call(settee_js_context *context, const int32_t *functions, size_t function_count,
                                const char *arguments_json, size_t arguments_json_length, settee_js_output *output,
                                settee_js_error *error) {
    JSContext *cx = context->cx;
    std::optional<JSAutoRealm> realm(std::in_place, cx, *context->global);
    ByteBuffer &out = context->output;
    out.clear();
    context->logs.clear();
    context->reactions.clear();

    JS::RootedValue argumentsValue(cx);
    JS::RootedValueVector arguments(cx);
    {
        CallScope scope(context);
        bool ok = parseJSON(context, arguments_json, arguments_json_length, &argumentsValue);
        bool isArray = false;
        if (ok && argumentsValue.isObject()) {
            JS::RootedObject array(cx, &argumentsValue.toObject());
            uint32_t length = 0;
            ok = JS::IsArrayObject(cx, array, &isArray) && isArray && JS::GetArrayLength(cx, array, &length);
            JS::RootedValue element(cx);
            for (uint32_t i = 0; ok && i < length; i++) {
                ok = JS_GetElement(cx, array, i, &element) && arguments.append(element);
            }
        }
        if (!ok || !isArray) {
            Failure failure = ok ? Failure{} : takeFailure(context, 0);
            if (ok) failure.message = "the arguments must be a JSON array";
            setError(context, error, SETTEE_JS_INVALID_INPUT, failure.message);
            return SETTEE_JS_INVALID_INPUT;
        }
    }
    JS::RootedValue fn(cx);
    JS::RootedValue result(cx);
    for (size_t i = 0; i < function_count; i++) {
        JSObject *function = functionFor(context, functions[i]);
        if (!function) {
            Failure failure;
            failure.status = SETTEE_JS_INTERNAL_ERROR;
            failure.message = "no compiled function with handle " + std::to_string(functions[i]);
            appendFailure(out, failure);
            continue;
        }
        fn.setObject(*function);
        CallScope scope(context);
        size_t start = out.size();
        out.appendU32(0);
        out.appendU32(0);
        bool ok = callFunction(context, fn, JS::HandleValueArray(arguments), &result) &&
                  settee::writeJSON(cx, result, out);
        if (ok) {
            out.patchU32(start + 4, uint32_t(out.size() - start - 8));
        } else {
            Failure failure = takeFailure(context, 0);
            out.truncate(start);
            appendFailure(out, failure);
        }
    }
    // Nothing of this call may keep the global alive if it is reset.
    argumentsValue.setUndefined();
    arguments.clear();
    fn.setUndefined();
    result.setUndefined();
    realm.reset();
    finishCall(context, function_count, output);
    return SETTEE_JS_OK;
}

}  // extern "C"

// ---------------------------------------------------------------------------
// The query server's natives: its output, its input (for list functions'
// `getRow`), and compiling design-document functions with `require` rooted at
// the design document.

namespace {

bool nativePrint(JSContext *cx, unsigned argc, JS::Value *vp) {
    JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
    settee_js_context *context = contextOf(cx);
    JS::RootedString text(cx, JS::ToString(cx, args.get(0)));
    if (!text) return false;
    std::string line;
    if (!settee::appendUTF8(cx, text, line)) return false;
    if (context->host.write_line) context->host.write_line(context->host.info, line.data(), line.size());
    args.rval().setUndefined();
    return true;
}

bool nativeReadLine(JSContext *cx, unsigned argc, JS::Value *vp) {
    JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
    settee_js_context *context = contextOf(cx);
    const char *bytes = nullptr;
    size_t length = 0;
    // Waiting for CouchDB's next row is not the function's time: the limit
    // starts again with each line, like CouchDB's own per-prompt timeout.
    context->deadline.store(0, std::memory_order_release);
    bool read = context->host.read_line && context->host.read_line(context->host.info, &bytes, &length);
    if (context->timeoutMilliseconds > 0) {
        context->deadline.store(nowNanoseconds() + int64_t(context->timeoutMilliseconds) * 1000000,
                                std::memory_order_release);
    }
    if (!read) {
        args.rval().setNull();
        return true;
    }
    if (length == 0) {
        args.rval().setString(JS_GetEmptyString(cx));
        return true;
    }
    JS::RootedString line(cx, JS_NewStringCopyUTF8N(cx, JS::UTF8Chars(bytes, length)));
    if (!line) return false;
    args.rval().setString(line);
    return true;
}

// compileFunction(source, name, requireRoot): the value of the source, in a
// realm of its own (as couchjs gives each design function a sandbox), with
// `require` resolving paths inside `requireRoot`.
bool nativeCompileFunction(JSContext *cx, unsigned argc, JS::Value *vp) {
    JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
    settee_js_context *context = contextOf(cx);
    JS::RootedString source(cx, JS::ToString(cx, args.get(0)));
    JS::RootedString name(cx, JS::ToString(cx, args.get(1)));
    if (!source || !name) return false;
    std::string body, file;
    if (!settee::appendUTF8(cx, source, body) || !settee::appendUTF8(cx, name, file)) return false;
    std::string wrapped = "(function (require) { return (";
    wrapped.append(body.data(), trimmedLength(body.data(), body.size()));
    wrapped.append("\n); })");
    JS::RootedObject sandbox(cx);
    JS::RootedObject maker(cx);
    if (!newSandbox(context, true, &sandbox, &maker)) return false;
    JS::RootedValue function(cx);
    {
        JSAutoRealm realm(cx, sandbox);
        JS::CompileOptions options(cx);
        options.setFileAndLine(file.c_str(), 1);
        JS::SourceText<mozilla::Utf8Unit> text;
        JS::RootedValue factory(cx);
        if (!text.init(cx, wrapped.data(), wrapped.size(), JS::SourceOwnership::Borrowed) ||
            !JS::Evaluate(cx, options, text, &factory)) {
            return false;
        }
        JS::RootedValue makeRequire(cx, JS::ObjectValue(*maker));
        JS::RootedValue require(cx);
        if (!JS::Call(cx, JS::UndefinedHandleValue, makeRequire, JS::HandleValueArray(args.get(2)), &require) ||
            !JS::Call(cx, JS::UndefinedHandleValue, factory, JS::HandleValueArray(require), &function)) {
            return false;
        }
    }
    args.rval().set(function);
    return true;
}

// Registers `value` (a function) under a new handle, with no source: it is
// not compiled again.
int32_t registerFunction(settee_js_context *context, JS::HandleValue value) {
    int32_t handle = int32_t(context->functions.size());
    context->functions.push_back(std::make_unique<JS::PersistentRootedObject>(context->cx, &value.toObject()));
    context->sources.emplace_back();
    return handle;
}

}  // namespace

extern "C" bool settee_js_context_install_query_server(settee_js_context *context, const settee_js_host *host,
                                                       int32_t *ddoc_function, int32_t *index_mode_function,
                                                       settee_js_error *error) {
    JSContext *cx = context->cx;
    if (context->hostHardened || !context->functions.empty()) {
        setError(context, error, SETTEE_JS_INTERNAL_ERROR,
                 "the query server must be installed before any function is compiled");
        return false;
    }
    JSAutoRealm realm(cx, *context->global);
    context->host = *host;
    // The query server's state is CouchDB's to manage (it resets it with `reset`).
    context->queryServerInstalled = true;
    JS::RootedObject global(cx, *context->global);
    JS::CompileOptions options(cx);
    options.setFileAndLine("settee:query-server", 1);
    JS::SourceText<mozilla::Utf8Unit> source;
    JS::RootedValue runtime(cx);
    JS::RootedValue sandboxGlobals(cx);
    JS::RootedValue ddoc(cx);
    JS::RootedValue setIndexMode(cx);
    bool ok = JS_DefineFunction(cx, global, "__settee_print", nativePrint, 1, 0) &&
              JS_DefineFunction(cx, global, "__settee_readline", nativeReadLine, 0, 0) &&
              JS_DefineFunction(cx, global, "__settee_compileFunction", nativeCompileFunction, 3, 0) &&
              source.init(cx, settee::kQueryServerSource, strlen(settee::kQueryServerSource),
                          JS::SourceOwnership::Borrowed) &&
              JS::Evaluate(cx, options, source, &runtime) && runtime.isObject();
    if (ok) {
        JS::RootedObject object(cx, &runtime.toObject());
        ok = JS_GetProperty(cx, object, "sandboxGlobals", &sandboxGlobals) && sandboxGlobals.isObject() &&
             JS_GetProperty(cx, object, "ddoc", &ddoc) && ddoc.isObject() &&
             JS_GetProperty(cx, object, "setIndexMode", &setIndexMode) && setIndexMode.isObject();
    }
    if (ok) {
        context->sandboxGlobals = std::make_unique<JS::PersistentRootedObject>(cx, &sandboxGlobals.toObject());
        ok = hardenHost(context);
    }
    if (!ok) {
        Failure failure = takeFailure(context, 0);
        setError(context, error, SETTEE_JS_INTERNAL_ERROR, "the query server could not be set up: " + failure.message);
        return false;
    }
    *ddoc_function = registerFunction(context, ddoc);
    *index_mode_function = registerFunction(context, setIndexMode);
    return true;
}
