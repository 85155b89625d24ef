// The host realm (documents are parsed there; its built-ins are frozen), each
// compiled function's realm of its own, the natives they get, compiling and
// calling with promise reactions run to the end.
#include "EngineContext.h"
#include "Prelude.h"

#include <cstring>

namespace settee::engine {

const JSClass kGlobalClass = {"global", JSCLASS_GLOBAL_FLAGS, &JS::DefaultGlobalClassOps};


// CouchDB's `error_to_json` (share/server/util.js), which its `emit` applies
// to the value: an Error (from any realm) becomes `{error: name, message:
// message}`, where JSON.stringify would make it `{}`. CouchDB tells an Error
// by its `stack`, `name` and `message`; the class is checked here instead, so
// that emitting a plain object costs no property lookups.
static bool errorToJSON(JSContext *cx, JS::MutableHandleValue value) {
    JS::RootedObject object(cx, &value.toObject());
    js::ESClass cls;
    if (!JS::GetBuiltinClass(cx, object, &cls)) return false;
    if (cls != js::ESClass::Error) return true;
    JS::RootedValue name(cx), message(cx);
    JS::RootedObject json(cx, JS_NewPlainObject(cx));
    if (!json || !JS_GetProperty(cx, object, "name", &name) || !JS_GetProperty(cx, object, "message", &message) ||
        !JS_DefineProperty(cx, json, "error", name, JSPROP_ENUMERATE) ||
        !JS_DefineProperty(cx, json, "message", message, JSPROP_ENUMERATE)) {
        return false;
    }
    value.setObject(*json);
    return true;
}

static bool nativeEmit(JSContext *cx, unsigned argc, JS::Value *vp) {
    JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
    settee_js_context *context = contextOf(cx);
    if (!context->emitTarget) {
        JS_ReportErrorASCII(cx, "emit() can only be called from a map function");
        return false;
    }
    ByteBuffer &out = *context->emitTarget;
    size_t mark = out.size();
    JS::RootedValue value(cx, args.get(1));
    if (value.isObject() && !errorToJSON(cx, &value)) return false;
    for (unsigned i = 0; i < 2; i++) {
        size_t lengthAt = out.size();
        out.appendU32(0);
        // Key and value are elements 0 and 1 of CouchDB's `[key, value]` row (what their toJSON is passed).
        if (!settee::writeJSON(cx, i == 0 ? args.get(0) : JS::HandleValue(value), out, i)) {
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

static bool nativeLog(JSContext *cx, unsigned argc, JS::Value *vp) {
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
static bool nativeCompileModule(JSContext *cx, unsigned argc, JS::Value *vp) {
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
static bool runPrelude(JSContext *cx, RefPtr<JS::Stencil> &stencil, const char *source, const char *name,
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
static bool drainReactions(settee_js_context *context) {
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


static bool isASCII(const char *bytes, size_t length) {
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
    bool evaluated = text.init(cx, wrapped.data(), wrapped.size(), JS::SourceOwnership::Borrowed) &&
                     JS::Evaluate(cx, options, text, &value);
    // Helpers declared before the function: `value` is then a factory taking `require`.
    bool rewritten = false;
    if (!evaluated &&
        evaluateWithAnonymousFunction(cx, compiled.text, compiled.name.c_str(), &value) == AnonymousFunctionRewrite::evaluated) {
        evaluated = rewritten = true;
    }
    if (!evaluated || !drainReactions(context)) {
        Failure failure = takeFailure(context, uint32_t(prefix.size()));
        settee_js_status status = failure.status == SETTEE_JS_RUNTIME_ERROR ? SETTEE_JS_COMPILE_ERROR : failure.status;
        setError(context, error, status, failure.message, failure.line, failure.column, failure.stack);
        return false;
    }
    if (rewritten && !compiled.hasLibrary) {
        // The factory's `require` parameter must not hide the realm's own.
        JS::RootedValue require(cx);
        JS::RootedValue factory(cx, value);
        JS::RootedObject global(cx, sandbox);
        if (!JS_GetProperty(cx, global, "require", &require) ||
            !JS::Call(cx, JS::UndefinedHandleValue, factory, JS::HandleValueArray(require), &value) ||
            !drainReactions(context)) {
            Failure failure = takeFailure(context, 0);
            setError(context, error, SETTEE_JS_COMPILE_ERROR, failure.message, failure.line, failure.column,
                     failure.stack);
            return false;
        }
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

}  // namespace settee::engine
