// What the engine holds, measured: the bound on a call's memory, and the
// bound on the memory functions keep between calls, in globals.
#include "EngineContext.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace settee::engine {

static size_t mallocSizeOf(const void *pointer) {
#if defined(__GLIBC__)
    return pointer ? malloc_usable_size(const_cast<void *>(pointer)) : 0;
#else
    return 0;
#endif
}

// Typed-array data the engine's memory reporter misses: a typed array the JIT
// created owns its elements until something asks for its buffer, and only
// buffers are reported. The reporter calls the visitor for every object.
static thread_local size_t tUnreportedTypedArrayBytes = 0;

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
static size_t keptBytes(settee_js_context *context) {
    JSContext *cx = context->cx;
    JS::RootedObject global(cx, *context->global);
    JSAutoRealm realm(cx, global);
    JS::TabSizes sizes;
    TypedArrayVisitor visitor;
    tUnreportedTypedArrayBytes = 0;
    if (!JS::AddSizeOfTab(cx, global, mallocSizeOf, &visitor, &sizes)) return 0;
    return sizes.objects_ + sizes.strings_ + sizes.private_ + sizes.other_ + tUnreportedTypedArrayBytes;
}

// What the context holds for the running call: every realm's GC heap and what
// that mallocs, garbage included, and the rows and logs the call wrote.
static uint64_t engineBytes(settee_js_context *context) {
    JS::ServoSizes sizes;
    TypedArrayVisitor visitor;
    tUnreportedTypedArrayBytes = 0;
    if (!JS::AddServoSizeOf(context->cx, mallocSizeOf, &visitor, &sizes)) return UINT64_MAX;
    uint64_t bytes = sizes.gcHeapUsed + sizes.gcHeapUnused + sizes.gcHeapAdmin + sizes.mallocHeap + sizes.nonHeap +
                     tUnreportedTypedArrayBytes + context->output.size();
    for (const std::string &line : context->logs) bytes += line.size();
    return bytes;
}

bool callWithinMemoryBound(settee_js_context *context, uint64_t call) {
    uint64_t bytes = engineBytes(context);
    if (bytes > context->memoryLimitBytes) {
        // Garbage counts only until it is collected.
        JS_GC(context->cx);
        bytes = engineBytes(context);
    }
    if (bytes > context->memoryLimitBytes) {
        context->memoryExceededCall.store(call);
        return false;
    }
    context->engineBytesAtCheck.store(bytes, std::memory_order_relaxed);
    context->memoryCheckedCall.store(call, std::memory_order_release);
    return true;
}

// Replaces the host realm with a fresh one and compiles every live function
// again, each in a new realm, under its handle: what the functions kept in
// globals is gone.
static void resetGlobalState(settee_js_context *context) {
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
static void noteKeptCheck(settee_js_context *context) {
    context->heapBytesAtKeptCheck = JS_GetGCParameter(context->cx, JSGC_BYTES);
    context->majorCollectionsAtKeptCheck = JS_GetGCParameter(context->cx, JSGC_MAJOR_GC_NUMBER);
}

// After a call, when asked (see below): measures what the functions keep,
// collects garbage if that is over the bound, and resets the global state if
// it still is. Returns false, with the failure to report for the call, if it
// was reset. Runs outside any realm, so the old global can go.
static bool keepWithinKeptBound(settee_js_context *context, Failure &failure) {
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

}  // namespace settee::engine
