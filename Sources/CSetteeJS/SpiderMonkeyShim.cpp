// The C interface of settee_js.h over SpiderMonkey 102. The engine's pieces
// are in Watchdog.cpp, Failures.cpp, Realms.cpp, KeptMemory.cpp and
// QueryServerNatives.cpp; EngineContext.h is what they share.
#include "EngineContext.h"

#include <optional>
#include <string>

using namespace settee::engine;

extern "C" {

bool settee_js_initialize(void) {
    return initializeEngine();
}

void settee_js_shut_down(void) {
    shutDownEngine();
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
    watch(context.get());
    return context.release();
}

void settee_js_context_destroy(settee_js_context *context) {
    if (!context) return;
    unwatch(context);
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

void settee_js_context_clear_interrupt(settee_js_context *context) {
    context->interruptRequested.store(false);
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
                  settee::writeJSON(cx, result, out, uint32_t(i));
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
