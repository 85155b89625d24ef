// The query server's natives and runtime (`settee couchjs`): its output, its
// input (for list functions' `getRow`), and design functions compiled each
// in a realm of its own with `require` rooted at the design document.
#include "EngineContext.h"

#include <cstring>

namespace settee::engine {

// The query server's natives: its output, its input (for list functions'
// `getRow`), and compiling design-document functions with `require` rooted at
// the design document.


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
            // Helpers declared before the function, as CouchDB accepts them.
            std::string trimmed(body.data(), trimmedLength(body.data(), body.size()));
            if (evaluateWithAnonymousFunction(cx, trimmed, file.c_str(), &factory) != AnonymousFunctionRewrite::evaluated) {
                return false;
            }
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

}  // namespace settee::engine

using namespace settee::engine;

extern "C" bool settee_js_context_install_query_server(settee_js_context *context, const settee_js_host *host,
                                                       const char *runtime_source, size_t runtime_length,
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
              source.init(cx, runtime_source, runtime_length, JS::SourceOwnership::Borrowed) &&
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
