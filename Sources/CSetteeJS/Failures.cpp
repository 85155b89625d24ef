// What went wrong in a call, described for the C interface and the output.
#include "EngineContext.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace settee::engine {

void setError(settee_js_context *context, settee_js_error *error, settee_js_status status,
              std::string message, uint32_t line, uint32_t column, std::string stack) {
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

// The source form of a value (JS_ValueToSource), "" when it has none.
static std::string valueSource(JSContext *cx, JS::HandleValue value) {
    JS::RootedString source(cx, JS_ValueToSource(cx, value));
    std::string out;
    if (!source || !settee::appendUTF8(cx, source, out)) {
        JS_ClearPendingException(cx);
        return "";
    }
    return out;
}

// What couchjs's errstr (share/server/util.js: `e.toSource()`, SpiderMonkey's
// toSource methods) shows for a thrown value: primitives as their wrapper
// objects' source, an Error as `(new Name(message, file, line))`, other
// objects as their source text.
static std::string thrownSource(JSContext *cx, JS::HandleValue value, JSErrorReport *report) {
    if (value.isString() || value.isNumber() || value.isBoolean()) {
        const char *wrapper = value.isString() ? "String" : value.isNumber() ? "Number" : "Boolean";
        std::string inner = valueSource(cx, value);
        return inner.empty() ? "" : std::string("(new ") + wrapper + "(" + inner + "))";
    }
    if (!value.isObject()) return "";
    if (report) {
        JS::RootedObject object(cx, &value.toObject());
        JS::RootedValue name(cx), message(cx);
        if (!JS_GetProperty(cx, object, "name", &name) || !JS_GetProperty(cx, object, "message", &message)) {
            JS_ClearPendingException(cx);
            return "";
        }
        std::string text = "(new " + stringOf(cx, name) + "(" + valueSource(cx, message);
        JS::RootedValue file(cx);
        if (report->filename) {
            JS::RootedString fileString(cx, JS_NewStringCopyZ(cx, report->filename));
            if (fileString) file.setString(fileString);
        }
        if (!file.isUndefined() || report->lineno != 0) {
            text += ", " + (file.isUndefined() ? std::string("\"\"") : valueSource(cx, file));
            if (report->lineno != 0) text += ", " + std::to_string(report->lineno);
        }
        return text + "))";
    }
    return valueSource(cx, value);
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
                failure.source = thrownSource(cx, value, r);
            }
        } else {
            JS_ClearPendingException(cx);
        }
    } else {
        // A thrown non-Error (CouchDB code throws arrays and objects): shown as JSON.
        failure.message = stringOf(cx, value);
        failure.source = thrownSource(cx, value, nullptr);
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
    out.appendString(failure.source.data(), failure.source.size());
}

void appendLogs(settee_js_context *context) {
    context->output.appendU32(static_cast<uint32_t>(context->logs.size()));
    for (const std::string &line : context->logs) context->output.appendString(line.data(), line.size());
    context->logs.clear();
}

}  // namespace settee::engine
